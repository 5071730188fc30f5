//! The RollingSync steps the rollout benchmarks share: one step per `wave` label value, each
//! updating at most 25% of its Applications at a time.

use flotilla_core::api::application_set::RollingSyncStep;
use flotilla_generators::selector::LabelSelectorRequirement;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// `count` steps; step `s` selects the Applications labelled `wave: "s"`.
pub fn wave_steps(count: usize) -> Vec<RollingSyncStep> {
    (0..count)
        .map(|s| RollingSyncStep {
            match_expressions: vec![LabelSelectorRequirement {
                key: "wave".into(),
                operator: "In".into(),
                values: vec![s.to_string()],
            }],
            max_update: Some(IntOrString::String("25%".into())),
            ..RollingSyncStep::default()
        })
        .collect()
}
