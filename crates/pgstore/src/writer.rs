//! Who wrote a run, from the environment of the process that stored it:
//! the user, the host, and the CI job or Kubernetes job index when the
//! environment names one. Kept beside the run's row, never in its bundle
//! (so never in the hash chain, and never in what replays).
//!
//! Why a column and not the header (was decision 0245): a writer field in the
//! hashed header would make two machines' runs of one case differ, and writer
//! columns in the local SQLite index would be lost when it is rebuilt from
//! bundles, which do not hold them.

use serde::Serialize;

/// A run's writer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Writer {
    pub user: String,
    pub host: String,
    /// The CI job (`github:<run id>/<job>`, `gitlab:<job id>`,
    /// `buildkite:<job id>`, `jenkins:<build tag>`, `ci:<CI_JOB_ID>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_job: Option<String>,
    /// A Kubernetes Indexed Job's completion index (`JOB_COMPLETION_INDEX`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_index: Option<String>,
}

impl Writer {
    /// The writer this process is, read from `var` (the environment).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Writer {
        let get = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let user = get("USER")
            .or_else(|| get("LOGNAME"))
            // SAFETY: getuid cannot fail.
            .unwrap_or_else(|| format!("uid {}", unsafe { libc::getuid() }));
        let host = get("HOSTNAME")
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown".into());
        let ci_job = if let Some(run) = get("GITHUB_RUN_ID") {
            Some(format!(
                "github:{run}/{}",
                get("GITHUB_JOB").unwrap_or_default()
            ))
        } else if get("GITLAB_CI").is_some() {
            get("CI_JOB_ID").map(|j| format!("gitlab:{j}"))
        } else if let Some(j) = get("BUILDKITE_JOB_ID") {
            Some(format!("buildkite:{j}"))
        } else if let Some(tag) = get("BUILD_TAG") {
            Some(format!("jenkins:{tag}"))
        } else {
            get("CI_JOB_ID").map(|j| format!("ci:{j}"))
        };
        Writer {
            user,
            host,
            ci_job,
            job_index: get("JOB_COMPLETION_INDEX"),
        }
    }

    /// Whether `text` is a substring of any of the writer's fields.
    pub fn matches(&self, text: &str) -> bool {
        [
            Some(&self.user),
            Some(&self.host),
            self.ci_job.as_ref(),
            self.job_index.as_ref(),
        ]
        .into_iter()
        .flatten()
        .any(|f| f.contains(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn ci_and_kubernetes_jobs_are_named_from_their_variables() {
        let w = Writer::from_env(env(&[
            ("USER", "ci"),
            ("HOSTNAME", "runner-7"),
            ("GITHUB_RUN_ID", "991"),
            ("GITHUB_JOB", "suite"),
        ]));
        assert_eq!(w.ci_job.as_deref(), Some("github:991/suite"));
        assert_eq!((w.user.as_str(), w.host.as_str()), ("ci", "runner-7"));
        let k = Writer::from_env(env(&[
            ("JOB_COMPLETION_INDEX", "3"),
            ("HOSTNAME", "suite-3-x"),
        ]));
        assert_eq!(k.job_index.as_deref(), Some("3"));
        assert_eq!(k.ci_job, None);
        assert!(k.matches("suite-3"));
        assert!(!k.matches("runner"));
    }
}
