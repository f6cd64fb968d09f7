//! `receta:common/codes`: the closed sets the API spells as codes, generated once here (every
//! component maps its bindings onto this module) and given their API form by hand: `page_size` is
//! an integer, `rx_status` and `sent_status` are `[code, label]` pairs, `gender` and a drug's
//! `category` their code (`Coded`). The database stores the
//! same codes (`code`, and `parse` reading them back).

use serde::ser::{Serialize, SerializeTuple, Serializer};

pub use crate::code_bindings::receta::common::codes::{
    Channel, DrugCategory, Gender, PageSize, PharmacyStatus, RxState, SentState,
};

impl PageSize {
    /// The API's and the database's number: 0 Letter, 1 Half Letter.
    pub fn number(self) -> u8 {
        match self {
            PageSize::Letter => 0,
            PageSize::HalfLetter => 1,
        }
    }

    /// From the API's or the database's number.
    pub fn from_number(n: i64) -> Option<PageSize> {
        match n {
            0 => Some(PageSize::Letter),
            1 => Some(PageSize::HalfLetter),
            _ => None,
        }
    }
}

impl Serialize for PageSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.number())
    }
}

/// A closed set spelled by one code in the API and the database, serialized as that code.
pub trait Coded: Sized + Copy + 'static {
    /// Every value, for `parse`.
    const ALL: &'static [Self];
    /// The code the API and the database use.
    fn code(self) -> &'static str;

    /// The value a code names.
    fn parse(code: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.code() == code)
    }
}

impl Coded for Gender {
    const ALL: &'static [Self] = &[Gender::M, Gender::F, Gender::O, Gender::H];

    fn code(self) -> &'static str {
        match self {
            Gender::M => "M",
            Gender::F => "F",
            Gender::O => "O",
            Gender::H => "H",
        }
    }
}

impl Coded for DrugCategory {
    const ALL: &'static [Self] = &[
        DrugCategory::StandardDrug,
        DrugCategory::BasicDrug,
        DrugCategory::UnstructuredDrug,
    ];

    fn code(self) -> &'static str {
        match self {
            DrugCategory::StandardDrug => "standard_drug",
            DrugCategory::BasicDrug => "basic_drug",
            DrugCategory::UnstructuredDrug => "unstructured_drug",
        }
    }
}

impl Serialize for Gender {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl Serialize for DrugCategory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

/// A code with a label, shown by the API as `[code, label]`.
pub trait Labelled: Coded {
    /// The label the API shows beside it.
    fn label(self) -> &'static str;
}

impl Coded for RxState {
    const ALL: &'static [Self] = &[
        RxState::Available,
        RxState::PartiallyDispensed,
        RxState::Dispensed,
        RxState::Rejected,
        RxState::Cancelled,
        RxState::Expired,
    ];

    fn code(self) -> &'static str {
        match self {
            RxState::Available => "available",
            RxState::PartiallyDispensed => "partially_dispensed",
            RxState::Dispensed => "dispensed",
            RxState::Rejected => "rejected",
            RxState::Cancelled => "cancelled",
            RxState::Expired => "expired",
        }
    }
}

impl Labelled for RxState {
    /// Spanish, as the pharmacist and the patient read them (docs/lifecycle.md).
    fn label(self) -> &'static str {
        match self {
            RxState::Available => "Disponible",
            RxState::PartiallyDispensed => "Surtida parcialmente",
            RxState::Dispensed => "Surtida",
            RxState::Rejected => "Rechazada",
            RxState::Cancelled => "Cancelada",
            RxState::Expired => "Vencida",
        }
    }
}

impl Coded for SentState {
    const ALL: &'static [Self] = &[SentState::Pending, SentState::NotSent, SentState::SentEmail];

    fn code(self) -> &'static str {
        match self {
            SentState::Pending => "pending",
            SentState::NotSent => "not_sent",
            SentState::SentEmail => "sent_email",
        }
    }
}

impl Labelled for SentState {
    fn label(self) -> &'static str {
        match self {
            SentState::Pending => "pending send",
            SentState::NotSent => "not sent",
            SentState::SentEmail => "sent by email",
        }
    }
}

impl Coded for Channel {
    const ALL: &'static [Self] = &[Channel::Email, Channel::Sms, Channel::Whatsapp];

    fn code(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Sms => "sms",
            Channel::Whatsapp => "whatsapp",
        }
    }
}

impl Serialize for Channel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl Coded for PharmacyStatus {
    const ALL: &'static [Self] = &[
        PharmacyStatus::WithPharmacy,
        PharmacyStatus::Preparing,
        PharmacyStatus::ReadyToCollect,
        PharmacyStatus::ReadyToDispatch,
        PharmacyStatus::Dispatched,
        PharmacyStatus::Collected,
        PharmacyStatus::NotDispensed,
    ];

    fn code(self) -> &'static str {
        match self {
            PharmacyStatus::WithPharmacy => "with_pharmacy",
            PharmacyStatus::Preparing => "preparing",
            PharmacyStatus::ReadyToCollect => "ready_to_collect",
            PharmacyStatus::ReadyToDispatch => "ready_to_dispatch",
            PharmacyStatus::Dispatched => "dispatched",
            PharmacyStatus::Collected => "collected",
            PharmacyStatus::NotDispensed => "not_dispensed",
        }
    }
}

impl Labelled for PharmacyStatus {
    /// Spanish, as the patient reads them on their page (docs/lifecycle.md).
    fn label(self) -> &'static str {
        match self {
            PharmacyStatus::WithPharmacy => "En la farmacia",
            PharmacyStatus::Preparing => "En preparación",
            PharmacyStatus::ReadyToCollect => "Lista para recoger",
            PharmacyStatus::ReadyToDispatch => "Lista para envío",
            PharmacyStatus::Dispatched => "Enviada",
            PharmacyStatus::Collected => "Entregada",
            PharmacyStatus::NotDispensed => "No surtida",
        }
    }
}

impl Serialize for PharmacyStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

fn pair<S: Serializer>(code: &str, label: &str, s: S) -> Result<S::Ok, S::Error> {
    let mut t = s.serialize_tuple(2)?;
    t.serialize_element(code)?;
    t.serialize_element(label)?;
    t.end()
}

impl Serialize for RxState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        pair(self.code(), self.label(), s)
    }
}

impl Serialize for SentState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        pair(self.code(), self.label(), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_code_label_pairs_and_parse_back() {
        let json =
            serde_json::to_string(&(RxState::PartiallyDispensed, SentState::NotSent)).unwrap();
        assert_eq!(
            json,
            r#"[["partially_dispensed","Surtida parcialmente"],["not_sent","not sent"]]"#
        );
        for s in RxState::ALL {
            assert_eq!(RxState::parse(s.code()), Some(*s));
        }
        for s in SentState::ALL {
            assert_eq!(SentState::parse(s.code()), Some(*s));
        }
        assert_eq!(RxState::parse("new_code"), None);
    }

    #[test]
    fn page_size_is_the_apis_number() {
        assert_eq!(serde_json::to_string(&PageSize::HalfLetter).unwrap(), "1");
        assert_eq!(PageSize::from_number(0), Some(PageSize::Letter));
        assert_eq!(PageSize::from_number(2), None);
    }
}
