//! Test support: the operators' kinds walked through the statuses their operators document
//! (`src/health/testdata/operator-walks.yaml`), shared by the core's unit test of the rules and
//! the API-server test that writes each status through the API.

use serde::Deserialize;
use serde_json::Value;

use super::HealthStatus;

/// One kind and the statuses its operator writes, in order.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Walk {
    /// `apiVersion` of the kind.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Plural, for a CRD of the kind.
    pub plural: String,
    /// The object's spec.
    pub spec: Value,
    /// The statuses.
    pub steps: Vec<Step>,
}

/// One status and the health it must have.
#[derive(Debug, Deserialize)]
pub struct Step {
    /// The status the operator writes.
    pub status: Value,
    /// A spec the user sets before it, if any.
    #[serde(default)]
    pub spec: Option<Value>,
    /// The health.
    pub health: HealthStatus,
    /// The message, when the step says.
    #[serde(default)]
    pub message: Option<String>,
}

/// Every walk, from `testdata/operator-walks.yaml` (compiled in).
///
/// # Panics
/// When the file does not parse (a test's failure).
#[must_use]
pub fn operator_walks() -> Vec<Walk> {
    let text = include_str!("testdata/operator-walks.yaml");
    serde_saphyr::from_str(text)
        .unwrap_or_else(|e| panic!("parsing core/src/health/testdata/operator-walks.yaml: {e}"))
}
