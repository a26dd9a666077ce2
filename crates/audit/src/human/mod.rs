//! People beside the judges: human label files ([`labels`]), the calibration run that judges
//! their answers ([`calibration`]), how the judges agree with them ([`agreement`]) and the
//! judges that prefer their own family's answers ([`self_preference`]).

pub(crate) mod agreement;
pub mod calibration;
pub(crate) mod labels;
pub(crate) mod self_preference;
