//! The names of the prescription events webhook subscribers choose and receive
//! (`receta:common/types.rx-event`), as the API and the outbox payloads spell them.

use crate::types::RxEvent;

/// Every event, in the order the API documents them.
pub const ALL: [RxEvent; 5] = [
    RxEvent::Created,
    RxEvent::Dispensed,
    RxEvent::Rejected,
    RxEvent::Cancelled,
    RxEvent::StatusChanged,
];

/// `prescription.created`, `prescription.dispensed`, …
pub fn name(event: RxEvent) -> &'static str {
    match event {
        RxEvent::Created => "prescription.created",
        RxEvent::Dispensed => "prescription.dispensed",
        RxEvent::Rejected => "prescription.rejected",
        RxEvent::Cancelled => "prescription.cancelled",
        RxEvent::StatusChanged => "prescription.status_changed",
    }
}

/// The event a name stands for.
pub fn parse(name: &str) -> Option<RxEvent> {
    ALL.into_iter().find(|e| self::name(*e) == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for event in ALL {
            assert_eq!(parse(name(event)), Some(event));
        }
        assert_eq!(parse("prescription.burned"), None);
        assert_eq!(parse("created"), None);
    }
}
