//! One command on several repeaters at once: a thread per host, each with
//! its own timeout; a host that fails does not stop the others, and every
//! host's outcome is reported ([`Error::Hosts`], exit code 4).

use crate::apply::{diff, Summary};
use crate::cli::Config;
use crate::error::Error;
use crate::io::{print, Io};
use crate::output;
use crate::remote::Remote;
use crate::request::{Call, Method};
use crate::routes::Route;
use crate::target::Target;

/// Runs `job` against every target in parallel; the results in target order.
pub fn each<T: Send>(
    targets: &[Target],
    job: impl Fn(&Remote) -> Result<T, Error> + Sync,
) -> Vec<Result<T, Error>> {
    let job = &job;
    std::thread::scope(|scope| {
        let workers: Vec<_> = targets
            .iter()
            .map(|t| scope.spawn(move || Remote::new(t).and_then(|r| job(&r))))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(Error::Failed("the request to this host crashed".into()))
                })
            })
            .collect()
    })
}

/// `Ok` when every host succeeded, else every host's outcome.
pub fn outcome(targets: &[Target], errors: Vec<Option<Error>>) -> Result<(), Error> {
    if errors.iter().all(Option::is_none) {
        return Ok(());
    }
    Err(Error::Hosts(
        targets.iter().map(Target::described).zip(errors).collect(),
    ))
}

/// get/post/put/delete on every host: the answers keyed by host.
pub fn send(
    config: &Config,
    call: &Call,
    body: Option<&str>,
    targets: &[Target],
    io: &mut Io<'_>,
) -> Result<(), Error> {
    let changes = matches!(call.method, Method::Post | Method::Put);
    let named = crate::topics::named(&call.path, body);
    let results = each(targets, |r| {
        let reply = r.request(call.method, &call.path, body)?;
        if changes {
            crate::topics::warn_unserved(r, &named, Some(&r.target().label()));
        }
        Ok(reply.body)
    });
    let mut answers = Vec::new();
    let mut errors = Vec::new();
    for (t, result) in targets.iter().zip(results) {
        match result {
            Ok(body) => {
                answers.push((t.label(), body));
                errors.push(None);
            }
            Err(e) => errors.push(Some(e)),
        }
    }
    print(
        io,
        &output::render_hosts(&answers, config.output, io.pretty),
    )?;
    outcome(targets, errors)
}

/// apply on every host: each host's difference (lines prefixed with the
/// host), then the change on every host that needs one.
pub fn apply(
    targets: &[Target],
    desired: &[Route],
    dry_run: bool,
    io: &mut Io<'_>,
) -> Result<(), Error> {
    let current = each(targets, Remote::routes);
    let mut errors: Vec<Option<Error>> = Vec::new();
    let mut text = String::new();
    let mut pending: Vec<(usize, Summary)> = Vec::new();
    // The routes each host gains, by label, to check against its source.
    let mut added: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (i, (t, result)) in targets.iter().zip(current).enumerate() {
        let label = t.label();
        match result {
            Err(e) => errors.push(Some(e)),
            Ok(current) => {
                errors.push(None);
                let changes = diff(&current, desired);
                if changes.is_empty() {
                    text.push_str(&format!("{label}: no changes\n"));
                    continue;
                }
                for c in &changes {
                    text.push_str(&format!("{label}: {c}\n"));
                }
                let summary = Summary::of(&changes);
                added.insert(label.clone(), crate::apply::added(&changes));
                if dry_run {
                    text.push_str(&format!(
                        "{label}: dry run, nothing changed: would be {summary}\n"
                    ));
                } else {
                    pending.push((i, summary));
                }
            }
        }
    }
    print(io, &text)?;
    if !pending.is_empty() {
        let chosen: Vec<Target> = pending.iter().map(|(i, _)| targets[*i].clone()).collect();
        let results = each(&chosen, |r| {
            r.replace_routes(desired)?;
            let label = r.target().label();
            if let Some(routes) = added.get(&label) {
                crate::topics::warn_unserved(r, routes, Some(&label));
            }
            Ok(())
        });
        let mut text = String::new();
        for ((i, summary), result) in pending.iter().zip(results) {
            match result {
                Ok(()) => text.push_str(&format!("{}: applied: {summary}\n", targets[*i].label())),
                Err(e) => errors[*i] = Some(e),
            }
        }
        print(io, &text)?;
    }
    outcome(targets, errors)
}
