//! What the values of the failsafe action parameters mean, for the wording of a change
//! ("NAV_DLL_ACT 0 (Disabled) to 1 (Hold)"). The names are PX4 v1.16's parameter metadata (the
//! `@value` lists of the commander's parameters), shortened the way the source document shortens
//! them ("Hold mode" is "Hold"). Only values with a known meaning are labelled; any other value
//! is shown as its number alone.

use super::params::ParamValue;

/// `NAV_DLL_ACT`: what the vehicle does when the data link to the ground is lost.
const NAV_DLL_ACT: &[(i64, &str)] = &[
    (0, "Disabled"),
    (1, "Hold"),
    (2, "Return"),
    (3, "Land"),
    (5, "Terminate"),
    (6, "Disarm"),
];

/// `COM_OBL_RC_ACT`: what the vehicle does when offboard control is lost.
const COM_OBL_RC_ACT: &[(i64, &str)] = &[
    (0, "Position"),
    (1, "Altitude"),
    (2, "Stabilized"),
    (3, "Return"),
    (4, "Land"),
    (5, "Hold"),
    (6, "Terminate"),
    (7, "Disarm"),
];

/// `COM_GNSSLOSS_ACT`: only the value the source document names (its other values are newer
/// than the metadata these labels follow, so they are shown as numbers).
const COM_GNSSLOSS_ACT: &[(i64, &str)] = &[(0, "Warning")];

/// The meaning of `value` for `parameter`, when it is an action parameter and the value is known.
pub fn label(parameter: &str, value: &ParamValue) -> Option<&'static str> {
    let table = match parameter {
        "NAV_DLL_ACT" => NAV_DLL_ACT,
        "COM_OBL_RC_ACT" => COM_OBL_RC_ACT,
        "COM_GNSSLOSS_ACT" => COM_GNSSLOSS_ACT,
        _ => return None,
    };
    let number = value.as_integer()?;
    table.iter().find(|(v, _)| *v == number).map(|(_, l)| *l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_values_are_labelled_as_the_document_words_them() {
        assert_eq!(label("NAV_DLL_ACT", &ParamValue::Int(0)), Some("Disabled"));
        assert_eq!(label("NAV_DLL_ACT", &ParamValue::Int(1)), Some("Hold"));
        assert_eq!(label("NAV_DLL_ACT", &ParamValue::Int(2)), Some("Return"));
        assert_eq!(label("COM_OBL_RC_ACT", &ParamValue::Int(5)), Some("Hold"));
        assert_eq!(
            label("COM_GNSSLOSS_ACT", &ParamValue::Int(0)),
            Some("Warning")
        );
        // A value PX4 does not define, and a parameter that is no action, have no label.
        assert_eq!(label("NAV_DLL_ACT", &ParamValue::Int(4)), None);
        assert_eq!(label("COM_DL_LOSS_T", &ParamValue::Int(10)), None);
        // A float that holds a whole number is the same action (a firmware that stores it so).
        assert_eq!(label("NAV_DLL_ACT", &ParamValue::Float(1.0)), Some("Hold"));
        assert_eq!(label("NAV_DLL_ACT", &ParamValue::Float(1.5)), None);
    }
}
