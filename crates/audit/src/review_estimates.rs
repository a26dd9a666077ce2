//! The "Reviewed" part of an audit: what people's labels on a random sample of the audited items
//! say, and the estimates a paper can print. Per dimension:
//! - the share of items that fail (alignment and the answer dimensions: a rating below the
//!   audit's threshold, 3 by default; completeness: the reviewer did not pick the gold), and
//!   for the rating dimensions the mean rating, each three ways with 95% intervals: from the
//!   judges alone (every audited item; biased by the judges by an unknown amount), from the
//!   reviewers alone (their random sample), and prediction-powered (PPI++: the reviewers' mean
//!   corrected by the judges' scores on every item; unbiased whatever the judges are worth,
//!   narrower than the reviewers' alone when the judges carry signal). All intervals cluster
//!   by dialogue.
//! - each judge's agreement with the reviewers (kappa with a cluster-bootstrap interval), and
//!   with two reviewers their own agreement (the ceiling);
//! - one plain sentence saying which number to publish.
//!
//! Only random-sample labels enter (keys `"<dimension>|<turn_id>|<passage_id>"`); the flagged
//! queue is not a random sample and only feeds the corrections ([`corrections`]). Several
//! reviewers on one item count once, with the mean of their answers (the mean of their 0/1
//! "fails", the mean of their ratings). The judges' prediction of "fails" is, per item, 1 when
//! the ensemble's rating is below the threshold (rating dimensions) and the share of the
//! judges' trials that did not pick the gold (completeness); of the rating, the ensemble's
//! mean rating. Items no judge scored are left out of all three estimates.

mod attach;
pub mod corrections;
pub(crate) mod estimates;
mod reviewed_dimension;
mod reviewer_agreement;
pub(crate) mod sampled_labels;

pub(crate) use crate::review_queue::label_log::EffectiveLabels;
pub use crate::review_queue::label_log::{audit_fingerprint, labels_path};
pub(crate) use crate::summary::review::{
    Review, ReviewEstimate, ReviewedDimension, ReviewerAgreement, ThreeWay,
};
pub use attach::{attach, review};

#[cfg(test)]
pub(crate) mod tests;
