//! The numbers of an audit: per-dimension statistics and biases ([`dimensions`]), the cluster
//! bootstrap ([`resample`]) and its [`interval`]s, the verdict on the judges ([`verdict`],
//! [`separation`]) and the judges that failed ([`failures`]).

pub mod dimensions;
pub mod failures;
pub mod interval;
pub mod resample;
pub mod separation;
pub mod verdict;
