//! The numbers of an audit: per-dimension statistics and biases ([`dimensions`], gathered for
//! the summary by [`per_dimension`]), the cluster
//! bootstrap ([`resample`]) and its [`interval`]s, the verdict on the judges ([`verdict`],
//! [`separation`]) and the judges that failed ([`failures`]).

pub(crate) mod all_dimensions;
pub(crate) mod dimension_statistics;
pub mod failures;
pub(crate) mod interval;
pub(crate) mod resample;
pub(crate) mod separation;
pub(crate) mod verdict;
