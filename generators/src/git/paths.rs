//! What both variants of the `git` generator use: the snapshot of the repository at the
//! resolved revision, include/exclude glob sets, and the `path` parameters.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};

use crate::generator::{GenerateContext, GeneratorError, GeneratorErrorReason, GitSnapshot};
use crate::params::{Params, normalize_name};
use crate::spec::{GitGenerator, GitPathItem};
use crate::template::TemplateMode;

/// The repository tree at the generator's revision (empty means `HEAD`).
pub(crate) fn snapshot(
    spec: &GitGenerator,
    ctx: &GenerateContext<'_>,
) -> Result<GitSnapshot, GeneratorError> {
    ctx.snapshot(&spec.repo_url, &spec.revision)
        .map_err(|source| {
            GeneratorError::here(GeneratorErrorReason::Git {
                repo: spec.repo_url.clone(),
                source,
            })
        })
}

/// Include and exclude globs of `directories` or `files`: a path is selected when an include
/// glob matches it and no exclude glob does.
pub(crate) struct PathPatterns {
    include: GlobSet,
    exclude: GlobSet,
}

impl PathPatterns {
    /// Compiles `items`; `literal_separator` keeps `*` inside one path segment.
    pub(crate) fn compile(
        items: &[GitPathItem],
        literal_separator: bool,
    ) -> Result<Self, GeneratorError> {
        let mut include = GlobSetBuilder::new();
        let mut exclude = GlobSetBuilder::new();
        for item in items {
            let glob = GlobBuilder::new(&item.path)
                .literal_separator(literal_separator)
                .build()
                .map_err(|e| invalid_glob(&item.path, &e))?;
            if item.exclude {
                exclude.add(glob);
            } else {
                include.add(glob);
            }
        }
        let build = |builder: GlobSetBuilder| {
            builder
                .build()
                .map_err(|e| invalid_glob(e.glob().unwrap_or_default(), &e))
        };
        Ok(Self {
            include: build(include)?,
            exclude: build(exclude)?,
        })
    }

    /// Whether `path` is selected.
    pub(crate) fn selects(&self, path: &str) -> bool {
        self.include.is_match(path) && !self.exclude.is_match(path)
    }
}

fn invalid_glob(pattern: &str, error: &globset::Error) -> GeneratorError {
    GeneratorError::here(GeneratorErrorReason::InvalidGlob {
        pattern: pattern.to_string(),
        message: error.kind().to_string(),
    })
}

/// The `path` parameters of directory `dir` (and of `filename` in it, for the files variant):
/// fasttemplate `path`, `path.basename`, `path.basenameNormalized`, `path.filename`,
/// `path.filenameNormalized`, `path[N]`; goTemplate a nested `path` map with `segments`. With
/// `prefix` they move under `<prefix>.path` / `<prefix>: {path: ..}`.
pub(crate) fn path_params(
    dir: &str,
    filename: Option<&str>,
    prefix: Option<&str>,
    mode: &TemplateMode,
) -> Params {
    let basename = dir.rsplit('/').next().unwrap_or(dir);
    let mut fields = vec![
        ("basename", basename.to_string()),
        ("basenameNormalized", normalize_name(basename)),
    ];
    if let Some(filename) = filename {
        fields.push(("filename", filename.to_string()));
        fields.push(("filenameNormalized", normalize_name(filename)));
    }
    let prefix = prefix.filter(|p| !p.is_empty());
    let mut params = Params::new();
    match mode {
        TemplateMode::Fast => {
            let name = prefix.map_or_else(|| "path".to_string(), |p| format!("{p}.path"));
            params.insert(name.clone(), dir.into());
            for (field, value) in fields {
                params.insert(format!("{name}.{field}"), value.into());
            }
            for (i, segment) in dir.split('/').enumerate().filter(|(_, s)| !s.is_empty()) {
                params.insert(format!("{name}[{i}]"), segment.into());
            }
        }
        TemplateMode::Go { .. } => {
            let mut path: Map<String, Value> = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.into()))
                .collect();
            path.insert("path".into(), dir.into());
            path.insert("segments".into(), dir.split('/').map(Value::from).collect());
            let path = Value::Object(path);
            match prefix {
                Some(p) => params.insert(
                    p.to_string(),
                    Value::Object(Map::from_iter([("path".to_string(), path)])),
                ),
                None => params.insert("path".into(), path),
            };
        }
    }
    params
}
