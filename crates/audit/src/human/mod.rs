//! People beside the judges: human label files ([`labels`]), the calibration run that judges
//! their answers ([`calibration`]) and how the judges agree with them ([`agreement`]).

pub(crate) mod agreement;
pub mod calibration;
pub(crate) mod labels;
