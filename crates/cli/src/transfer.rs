//! `arca export` and `arca import DIR`: a tree of resources with its whole history moved
//! between repositories as OCFL objects (Fedora 6's layout, so that Fedora 6 opens an
//! export as its `ocfl-root`), every digest verified on the way out and on the way in.
//!
//! Exit status: 0 on success, 1 when an object (or a bag, or a file of an export) was
//! refused, 2 when the command could not run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use arca_ocfl::{copy_object, list_objects_in, read_object_in, ObjectStorage, OcflRoot};
use arca_repository::Repository;
use arca_storage::FsStorage;
use clap::Args;

use crate::{bag, init_logging, load_config, CommonArgs};

/// Some object was refused.
const REFUSED: u8 = 1;
/// The command could not run.
const FAILED: u8 = 2;

/// `arca export`.
#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The resource to export with everything below it (`/` for the whole repository),
    /// as a path below the Fedora API's base (`/a/b`) or an id (`info:fedora/a/b`).
    path: String,
    /// The directory to write the OCFL storage root into (must not exist, or be empty).
    #[arg(long)]
    to: PathBuf,
    /// Wrap the storage root in a BagIt 1.0 bag (the root is then the bag's `data/`).
    #[arg(long)]
    bag: bool,
}

/// `arca import DIR`: an OCFL storage root (or a bag around one) exported by
/// `arca export` or written by Fedora 6.
#[derive(Args)]
pub struct ImportRootArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The storage root to import, or a BagIt bag whose `data/` holds it.
    #[arg(required = true)]
    dir: Option<PathBuf>,
    /// Place the exported tree at this path instead (its parent must exist): every
    /// version's object ids, headers and RDF IRIs inside the tree are rewritten.
    #[arg(long)]
    at: Option<String>,
    /// Replace objects of the same id that the repository holds already.
    #[arg(long)]
    overwrite: bool,
    /// Skip objects already imported identically (an interrupted import run again).
    #[arg(long)]
    resume: bool,
    /// The user recorded in the change log for the imported resources.
    #[arg(long, default_value = "fedoraAdmin")]
    user: String,
}

/// Runs `arca export`; failures are printed, and become the exit status.
pub async fn export(args: ExportArgs) -> ExitCode {
    outcome(export_tree(args).await)
}

/// Runs `arca import DIR`; failures are printed, and become the exit status.
pub async fn import(args: ImportRootArgs) -> ExitCode {
    outcome(import_root(args).await)
}

/// The exit status of a run: a refusal (a digest mismatch, a refused bag) is 1, any other
/// failure 2.
fn outcome(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("arca: {e:#}");
            if is_refusal(&e) {
                ExitCode::from(REFUSED)
            } else {
                ExitCode::from(FAILED)
            }
        }
    }
}

/// Whether `e` is bad content (a digest that does not match, a bag's file at fault)
/// rather than a failure to run.
fn is_refusal(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<bag::Refused>().is_some()
            || matches!(
                c.downcast_ref::<arca_ocfl::Error>(),
                Some(arca_ocfl::Error::Mismatch(_))
            )
    })
}

/// The OCFL object id of the resource at `path` (`/a/b`, `a/b` or `info:fedora/a/b`).
fn object_id_of(path: &str) -> String {
    let rel = path
        .strip_prefix("info:fedora")
        .unwrap_or(path)
        .trim_matches('/');
    if rel.is_empty() {
        "info:fedora".to_string()
    } else {
        format!("info:fedora/{rel}")
    }
}

/// Whether object `id` belongs to the tree whose top is `top`.
fn in_tree(id: &str, top: &str) -> bool {
    top == "info:fedora" || id == top || id.strip_prefix(top).is_some_and(|r| r.starts_with('/'))
}

fn progress_bar(len: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} objects ({per_sec}, eta {eta}) {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

async fn export_tree(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(&args.common)?;
    init_logging(&config.log);
    let top = object_id_of(&args.path);
    if args.to.exists()
        && std::fs::read_dir(&args.to)
            .with_context(|| format!("cannot read {}", args.to.display()))?
            .next()
            .is_some()
    {
        anyhow::bail!(
            "{} is not empty; export into a new directory",
            args.to.display()
        );
    }
    // Opening the repository replays what a stopped server left in its journal, so that
    // the root holds every acknowledged change.
    let (repo, catalog) = arca_server::open_repository(&config, true).await?;
    let ocfl = repo.ocfl().clone();
    let root = if args.bag {
        args.to.join(bag::PAYLOAD)
    } else {
        args.to.clone()
    };
    let copied = {
        let (to, root) = (args.to.clone(), root.clone());
        tokio::task::spawn_blocking(move || -> anyhow::Result<(usize, u64)> {
            let result = copy_tree(&ocfl, &top, &root);
            if result.is_err() {
                let _ = std::fs::remove_dir_all(&to);
            }
            result
        })
        .await?
    };
    repo.shutdown().await?;
    catalog.checkpoint()?;
    let (objects, bytes) = copied?;
    if args.bag {
        bag::write(&args.to)?;
    }
    println!(
        "exported {objects} objects ({:.1} MB) of {} to {}{}",
        bytes as f64 / 1e6,
        args.path,
        args.to.display(),
        if args.bag { " (a BagIt bag)" } else { "" }
    );
    Ok(ExitCode::SUCCESS)
}

/// Copies every object of the tree `top` of `ocfl` into a new storage root at `root`;
/// returns how many objects and bytes.
fn copy_tree(ocfl: &OcflRoot, top: &str, root: &Path) -> anyhow::Result<(usize, u64)> {
    let mut chosen = Vec::new();
    for prefix in ocfl.list_objects()? {
        let object = ocfl
            .read_object_at(&prefix)?
            .with_context(|| format!("{prefix}: the object disappeared"))?;
        if in_tree(&object.inventory.id, top) {
            chosen.push(prefix);
        }
    }
    anyhow::ensure!(!chosen.is_empty(), "no resource at {top}");
    ocfl.copy_root_files(root)?;
    let bar = progress_bar(chosen.len());
    let mut bytes = 0;
    for prefix in &chosen {
        copy_object(ocfl.store().as_ref(), prefix, &root.join(prefix))?;
        bytes += ocfl
            .store()
            .list(prefix)?
            .iter()
            .map(|f| f.size)
            .sum::<u64>();
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok((chosen.len(), bytes))
}

/// What became of one object of an import.
enum Outcome {
    Imported,
    Replaced,
    Skipped,
    Refused(String),
}

async fn import_root(args: ImportRootArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(&args.common)?;
    init_logging(&config.log);
    let dir = args.dir.clone().expect("required by clap");
    anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    let source_root = if bag::is_bag(&dir) {
        let d = dir.clone();
        tokio::task::spawn_blocking(move || bag::verify(&d)).await??
    } else {
        dir.clone()
    };
    let (source, prefixes, symlinks) = {
        let root = source_root.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let source = FsStorage::open(&root)
                .with_context(|| format!("cannot open {}", root.display()))?;
            // Parents before their children: an object is adopted only while nothing
            // lies below it.
            let mut prefixes = Vec::new();
            for prefix in list_objects_in(&source)? {
                let id = read_object_in(&source, &prefix)
                    .ok()
                    .flatten()
                    .map(|o| o.inventory.id);
                prefixes.push((id, prefix));
            }
            prefixes.sort();
            let symlinks: Vec<String> = bag::files_below(&root)?
                .into_iter()
                .filter(|e| e.symlink)
                .map(|e| e.rel)
                .collect();
            Ok((
                Arc::new(source) as Arc<dyn ObjectStorage>,
                prefixes,
                symlinks,
            ))
        })
        .await??
    };
    anyhow::ensure!(
        !prefixes.is_empty(),
        "{} holds no OCFL object",
        source_root.display()
    );
    let (repo, catalog) = arca_server::open_repository(&config, true).await?;
    let moving = match &args.at {
        Some(at) => match check_move(&repo, &prefixes, at).await {
            Ok(moving) => Some(moving),
            Err(e) => {
                // Nothing is imported; a clean stop still publishes what opening wrote
                // (a new root's object) instead of leaving it to the journal's replay.
                repo.shutdown().await?;
                catalog.checkpoint()?;
                return Err(e);
            }
        },
        None => None,
    };
    let bar = progress_bar(prefixes.len());
    let mut counts = [0usize; 4];
    let mut refused = Vec::new();
    for (_, prefix) in &prefixes {
        let outcome = match symlinks.iter().find(|s| {
            s.strip_prefix(prefix.as_str())
                .is_some_and(|r| r.starts_with('/'))
        }) {
            Some(link) => Outcome::Refused(format!("{link} is a symbolic link")),
            None => import_object(&repo, &source, prefix, moving.as_ref(), &args)
                .await
                .unwrap_or_else(|e| Outcome::Refused(format!("{e:#}"))),
        };
        match outcome {
            Outcome::Imported => counts[0] += 1,
            Outcome::Replaced => counts[1] += 1,
            Outcome::Skipped => counts[2] += 1,
            Outcome::Refused(why) => {
                counts[3] += 1;
                bar.suspend(|| eprintln!("refused {prefix}: {why}"));
                refused.push(why);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    repo.shutdown().await?;
    catalog.checkpoint()?;
    println!(
        "imported {} objects from {} into {} ({} replaced, {} already there and skipped, {} refused)",
        counts[0] + counts[1],
        dir.display(),
        arca_server::root_description(&config),
        counts[1],
        counts[2],
        counts[3]
    );
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(REFUSED)
    })
}

/// The move of `import --at`: the exported tree's top object id and the id it takes
/// (`at`), after checking that every object lies in that tree and that the new top's
/// parent exists in the repository (or is the root).
async fn check_move(
    repo: &Repository,
    prefixes: &[(Option<String>, String)],
    at: &str,
) -> anyhow::Result<(String, String)> {
    let ids: Vec<&str> = prefixes
        .iter()
        .map(|(id, p)| {
            id.as_deref()
                .with_context(|| format!("{p}: no readable inventory"))
        })
        .collect::<anyhow::Result<_>>()?;
    let top = ids
        .iter()
        .min_by_key(|id| id.len())
        .expect("at least one object")
        .to_string();
    anyhow::ensure!(
        top != "info:fedora",
        "--at: the export holds the repository root, which cannot move"
    );
    if let Some(outside) = ids.iter().find(|id| !in_tree(id, &top)) {
        anyhow::bail!("--at: {outside} is not in the tree {top}: the export is not one tree");
    }
    let to = object_id_of(at);
    anyhow::ensure!(
        to != "info:fedora",
        "--at: the tree cannot take the root's place"
    );
    let parent = to.rsplit_once('/').map_or("info:fedora", |(p, _)| p);
    if parent != "info:fedora" {
        let id = arca_model::FedoraId::from_internal(parent)
            .with_context(|| format!("--at: {at} is not a resource path"))?;
        let live = repo.lookup(&id).await?.is_some_and(|r| !r.is_deleted());
        anyhow::ensure!(live, "--at: {at}'s parent {parent} does not exist");
    }
    Ok((top, to))
}

/// Imports the object at `prefix` of `source`: copied into the staging area with every
/// digest checked (and, with `moving` = (old top, new top), its ids, headers and RDF
/// rewritten into the new tree), then adopted whole (or skipped, or put in place of the
/// object there).
async fn import_object(
    repo: &Arc<Repository>,
    source: &Arc<dyn ObjectStorage>,
    prefix: &str,
    moving: Option<&(String, String)>,
    args: &ImportRootArgs,
) -> anyhow::Result<Outcome> {
    let (ocfl, src, p) = (repo.ocfl().clone(), source.clone(), prefix.to_string());
    let mv = moving.cloned();
    let (id, same) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let object = read_object_in(src.as_ref(), &p)?
            .with_context(|| format!("{p}: the object disappeared"))?;
        let id = match &mv {
            Some((from, to)) => arca_ocfl::moved_id(&object.inventory.id, from, to)
                .with_context(|| format!("{p}: not in the tree {from}"))?,
            None => object.inventory.id,
        };
        let same = ocfl.holds_same(&id, src.as_ref(), &p)?;
        Ok((id, same))
    })
    .await??;
    if same == Some(true) && args.resume {
        // Moved in by a run that stopped before recording it, perhaps: the catalog
        // learns of it from storage (nothing changes if it knew already).
        repo.reindex_logged(&id).await?;
        return Ok(Outcome::Skipped);
    }
    if same.is_some() && !args.overwrite {
        return Ok(Outcome::Refused(format!(
            "{id} exists already (--overwrite replaces it{})",
            if args.resume {
                ""
            } else {
                ", --resume skips an identical one"
            }
        )));
    }
    let (ocfl, src, p) = (repo.ocfl().clone(), source.clone(), prefix.to_string());
    let mv = moving.cloned();
    let built = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let mut built = ocfl.copy_in(src.as_ref(), &p)?;
        if let Some((from, to)) = &mv {
            built.move_tree(from, to)?;
        }
        Ok(built)
    })
    .await??;
    anyhow::ensure!(
        built.object_id == id,
        "{prefix}: its inventory changed while it was read"
    );
    if same.is_some() {
        repo.adopt_replacing(built).await?;
        return Ok(Outcome::Replaced);
    }
    match repo.adopt(vec![built], &args.user).await?.pop() {
        Some(Ok(())) => Ok(Outcome::Imported),
        Some(Err(e)) => Ok(Outcome::Refused(e.to_string())),
        None => unreachable!("one result per object"),
    }
}
