//! The numbers of an audit: per-dimension statistics and biases ([`dimensions`]), the cluster
//! bootstrap ([`resample`]) and its [`interval`]s, the verdict on the judges ([`verdict`],
//! [`separation`]) and the judges that failed ([`failures`]).

pub(crate) mod dimensions;
pub mod failures;
pub(crate) mod interval;
pub(crate) mod resample;
pub(crate) mod separation;
pub(crate) mod verdict;
