//! Mexican identity numbers, parsed once with their check digits (docs/api-notes.md, "Medics"):
//! the RFC of a person (13 characters: 4 letters, the date of birth `YYMMDD`, a 2-character
//! homoclave and its check digit) and the CURP (18 characters, the last a check digit), as the SAT
//! and RENAPO compute them.

/// The RFC's alphabet: each character's value in the check digit's sum.
const RFC_ALPHABET: &str = "0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ Ñ";
/// The CURP's.
const CURP_ALPHABET: &str = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ";

/// A person's RFC with a correct check digit, upper-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rfc(String);

impl Rfc {
    /// `Err` with the sentence a 400 shows.
    pub fn parse(text: &str) -> Result<Rfc, &'static str> {
        let rfc = text.trim().to_uppercase();
        let chars: Vec<char> = rfc.chars().collect();
        let well_formed = chars.len() == 13
            && chars[..4]
                .iter()
                .all(|c| c.is_ascii_uppercase() || *c == '&' || *c == 'Ñ')
            && chars[4..10].iter().all(char::is_ascii_digit)
            && chars[10..].iter().all(char::is_ascii_alphanumeric);
        if !well_formed {
            return Err(
                "An RFC of a person has 13 characters: 4 letters, the date of birth \
                        (YYMMDD) and a 3-character homoclave.",
            );
        }
        if check_digit(&chars[..12], RFC_ALPHABET, 13, |sum| {
            let digit = (11 - sum % 11) % 11;
            if digit == 10 {
                'A'
            } else {
                char::from(b'0' + digit as u8)
            }
        }) != Some(chars[12])
        {
            return Err("This RFC's check digit (its last character) is wrong.");
        }
        Ok(Rfc(rfc))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A CURP with a correct check digit, upper-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Curp(String);

impl Curp {
    /// `Err` with the sentence a 400 shows.
    pub fn parse(text: &str) -> Result<Curp, &'static str> {
        let curp = text.trim().to_uppercase();
        let chars: Vec<char> = curp.chars().collect();
        let well_formed = chars.len() == 18
            && chars[..4].iter().all(|c| c.is_ascii_uppercase())
            && chars[4..10].iter().all(char::is_ascii_digit)
            && matches!(chars[10], 'H' | 'M' | 'X')
            && chars[11..16]
                .iter()
                .all(|c| c.is_ascii_uppercase() || *c == 'Ñ')
            && chars[16].is_ascii_alphanumeric()
            && chars[17].is_ascii_digit();
        if !well_formed {
            return Err(
                "A CURP has 18 characters: 4 letters, the date of birth (YYMMDD), the \
                        sex (H, M or X), 5 letters, and 2 more characters, the last a digit.",
            );
        }
        if check_digit(&chars[..17], CURP_ALPHABET, 18, |sum| {
            char::from(b'0' + ((10 - sum % 10) % 10) as u8)
        }) != Some(chars[17])
        {
            return Err("This CURP's check digit (its last character) is wrong.");
        }
        Ok(Curp(curp))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The check digit of `chars`: each character's value in `alphabet` weighted `first`, `first - 1`,
/// …, summed, then `digit` of the sum; `None` for a character outside the alphabet.
fn check_digit(
    chars: &[char],
    alphabet: &str,
    first: usize,
    digit: impl Fn(usize) -> char,
) -> Option<char> {
    let mut sum = 0;
    for (i, c) in chars.iter().enumerate() {
        let value = alphabet.chars().position(|a| a == *c)?;
        sum += value * (first - i);
    }
    Some(digit(sum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfcs_of_persons_with_their_check_digit() {
        // The representative's RFC in SAT's public test certificate, and a classic example.
        assert_eq!(
            Rfc::parse("hegt7610034s2").unwrap().as_str(),
            "HEGT7610034S2"
        );
        assert!(Rfc::parse("GODE561231GR8").is_ok());
        assert!(
            Rfc::parse("HEGT7610034S3")
                .unwrap_err()
                .contains("check digit")
        );
        assert!(
            Rfc::parse("AAA010101AAA")
                .unwrap_err()
                .contains("13 characters"),
            "a company's"
        );
        assert!(Rfc::parse("HEGTX610034S2").is_err());
    }

    #[test]
    fn curps_with_their_check_digit() {
        assert_eq!(
            Curp::parse("sabc560626mdflrn01").unwrap().as_str(),
            "SABC560626MDFLRN01"
        );
        // SAT's public test certificate's CURP does not carry a valid check digit.
        assert!(
            Curp::parse("HEGT761003MDFRNN09")
                .unwrap_err()
                .contains("check digit")
        );
        assert!(Curp::parse("SABC560626MDFLRN0").is_err());
        assert!(Curp::parse("SABC560626QDFLRN01").is_err(), "sex");
    }
}
