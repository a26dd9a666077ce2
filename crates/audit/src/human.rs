//! People beside the judges: human label files ([`rating_files`]), the calibration run that judges
//! their answers ([`calibration`]), how the judges agree with them ([`annotator_agreement`]) and the
//! judges that prefer their own family's answers ([`self_preference`]).

pub(crate) mod annotator_agreement;
pub(crate) mod calibration;
pub(crate) mod rating_files;
pub(crate) mod self_preference;

pub use calibration::text_table;
