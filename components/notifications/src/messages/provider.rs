//! The seam between the messages' queue (`messages`) and a provider's adapter (`whatsapp`,
//! `twilio`): what an adapter gives back and what it is asked. Another provider is one more module
//! implementing [`Provider`].

use outbound::send::Answer;
use outbound::target::Target;

use crate::messages::rows::Row;
use crate::messages::text::Said;

/// A provider's request for one message, ready to go.
pub struct Request {
    pub target: Target,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// A message provider (the adapter seam): how a message becomes its HTTP request, and which of its
/// answers says it was accepted, with the provider's id for it.
pub trait Provider {
    /// The request that sends `message` (`said`: what it says).
    fn request(&self, message: &Row, said: &Said) -> Result<Request, String>;
    /// The provider's id for the message in an accepting answer, or why the answer is no acceptance.
    fn accepted(&self, answer: &Answer) -> Result<String, String>;
}
