//! `flotilla app get NAME` and `flotilla app list`: one Application or those of a namespace (or
//! all), as `flotilla get apps` shows them (`-o wide` adds where each goes and what it syncs).

use std::process::ExitCode;

use kube::{Api, Client};

use crate::cli::get::{GetKind, applications_table, show};
pub use crate::cli::get::{ListArgs, ShowArgs as GetArgs};
use flotilla_core::api::application::Application;

/// Prints the Application `args.name`.
///
/// # Errors
/// No such Application, or it cannot be read.
pub async fn get(api: &Api<Application>, args: &GetArgs) -> anyhow::Result<ExitCode> {
    print!(
        "{}",
        show(api, &args.name, args.output, applications_table).await?
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints the Applications of `namespace` (or all).
///
/// # Errors
/// The list is refused.
pub async fn list(client: Client, namespace: &str, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let (listing, scope) = args.listing(namespace);
    print!("{}", listing.list_kind(GetKind::Apps, client, scope).await?);
    Ok(ExitCode::SUCCESS)
}
