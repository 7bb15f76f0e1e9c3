//! Rows in a child process. A kernel that hangs holds its process forever, and one that faults
//! (`CUDA_ERROR_ILLEGAL_ADDRESS`) leaves the process's CUDA context unusable: either would cost
//! every row after it. So the rows that can (on a GPU, every rung [`risk`] names; on a GPU and
//! in the simulator, every user kernel; every row under `--isolate`) run in a child: the harness itself, started with the
//! hidden `isolated-row` subcommand, which reads one [`Request`] as JSON on stdin, runs that
//! one kernel on that one shape and prints one [`Response`] line on stdout. The parent waits
//! at most the row's time limit, then kills the child's process group; a timeout or a crash
//! is recorded on the row, and the next row starts in a fresh process.
//!
//! A rung and its parent timed side by side for `vs parent` ([`timing::measure_pair`]) run in
//! a child too when either of them does: the same request, naming the parent and the two
//! rows' timings, answered with the rounds instead of a row.
//!
//! The protocol is versioned ([`PROTOCOL`]): a parent and a child of different builds refuse
//! each other with a clear message rather than misreading a row.

use crate::cmd::load_config;
use crate::config::Config;
use crate::results::{Row, Status};
use crate::runs::LabDir;
use crate::timing::{self, PairedTiming, Timing, TimingConfig};
use crate::{inputs, run, select, tune, user_kernel};
use anyhow::{Context, Result, bail};
use kernel::{DeviceKind, Executor, Kernel, Shape};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// The version of [`Request`] and [`Response`].
pub const PROTOCOL: u32 = 3;

/// The hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "isolated-row";

/// What starts the child's answer on its stdout, so that anything else it prints there is
/// never taken for the row.
const MARKER: &str = "harness-isolated-row ";

/// The default time limit of an isolated row on a GPU: far beyond the slowest correct row
/// (the largest shapes, timed), short enough that a hang costs minutes, not the hour.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Which rows run in a child, and for how long at most.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Every row (`--isolate`), not only those that can hang or fault a GPU process.
    pub all_rows: bool,
    pub timeout: Duration,
    /// The config file the command read, for the child to read too.
    pub config: Option<PathBuf>,
    /// The user kernels as given on the command line (`--kernel`), for the child to load.
    pub user_kernels: Vec<String>,
    /// The ids of the user kernels (from the command line or the config): isolated on a GPU
    /// and in the simulator.
    pub user_ids: Vec<String>,
    /// `--sim-blocks`, for the child's simulator.
    pub sim_blocks: Option<usize>,
}

static POLICY: RwLock<Option<Policy>> = RwLock::new(None);

/// Sets the policy for the rest of the process (`harness run` and `check` set it from their
/// flags; without one, as in the bench and in tests, every row runs in the process).
pub fn set_policy(policy: Option<Policy>) {
    *POLICY.write().unwrap_or_else(|e| e.into_inner()) = policy;
}

/// The policy, if this row of `kernel` on `dev` at `shape` must run in a child. Rows the
/// device or kernel declines run in the process: they record their reason without running.
pub fn policy_for(dev: &dyn Executor, kernel: &dyn Kernel, shape: &Shape) -> Option<Policy> {
    let guard = POLICY.read().unwrap_or_else(|e| e.into_inner());
    let policy = guard.as_ref()?;
    let id = kernel.info().id;
    // A user's kernel may loop forever or corrupt the simulator's memory as well as a GPU's.
    let user = policy.user_ids.iter().any(|u| *u == id);
    let risky = match dev.kind() {
        DeviceKind::Cuda => user || risk(kernel, shape).is_some(),
        DeviceKind::Sim => user,
        DeviceKind::Cpu => false,
    };
    if !(policy.all_rows || risky) {
        return None;
    }
    if dev.can_run(kernel).is_err() || kernel.supports(shape).is_err() {
        return None;
    }
    Some(policy.clone())
}

/// Why a row of this lab kernel could hang or fault its process on a GPU, or `None`: it runs
/// only on a GPU (`Kernel::gpu_only`), or it is compiled for an architecture-specific target
/// alone (`sm_90a`: wgmma, TMA and mbarrier waits, where a wrong byte count or descriptor
/// hangs or faults rather than computing a wrong value).
pub fn risk(kernel: &dyn Kernel, shape: &Shape) -> Option<String> {
    if let Some(why) = kernel.gpu_only() {
        return Some(why.to_string());
    }
    let plan = kernel.cuda(shape)?;
    plan.launches().find_map(|l| {
        l.source
            .arch
            .as_ref()
            .map(|a| format!("compiled for {a} alone (wgmma, TMA, mbarrier waits)"))
    })
}

/// What the parent asks of the child.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub protocol: u32,
    /// `cpu`, `cuda` or `sim`.
    pub device: String,
    pub config: Option<PathBuf>,
    pub user_kernels: Vec<String>,
    pub kernel: String,
    pub shape: Shape,
    /// `None`: validate only.
    pub timing: Option<TimingConfig>,
    #[serde(default)]
    pub sim_blocks: Option<usize>,
    /// Time `kernel` against this parent instead of running its row.
    #[serde(default)]
    pub pair: Option<PairRequest>,
    /// The shape's reference as the parent computed it ([`ReferenceFile`]); `None`: the child
    /// computes it.
    #[serde(default)]
    pub reference: Option<PathBuf>,
    /// The row's time limit, after which the parent kills the child: the simulator's watchdog
    /// stops a hung launch a moment before, saying where its threads wait.
    #[serde(default)]
    pub row_timeout_s: Option<f64>,
}

/// A shape's reference in a file, for the children of the shape's isolated rows to read
/// rather than compute again: at the headline shapes a network's f64 forward pass or a GEMM's
/// takes seconds to tens of seconds of every core, and a GPU run isolates a dozen rows of
/// the encoder alone. Deleted when dropped.
pub struct ReferenceFile {
    path: PathBuf,
}

const REFERENCE_MAGIC: &[u8] = b"kernel-lab reference 2\n";
const REFERENCE_PREFIX: &str = "lab-reference-";

impl ReferenceFile {
    /// Writes `reference` to a new file in the temporary folder, first deleting the files that
    /// harnesses no longer running left there (a run killed mid-shape cannot delete its own; at
    /// 8192 a GEMM's is 512 MB).
    pub fn write(reference: &run::Reference) -> Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self::delete_orphans();
        let path = std::env::temp_dir().join(format!(
            "{REFERENCE_PREFIX}{}-{}.bin",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = Self { path };
        let words = |n: usize| (n as u64).to_le_bytes();
        let mut bytes = REFERENCE_MAGIC.to_vec();
        bytes.extend(words(reference.label.len()));
        bytes.extend(reference.label.as_bytes());
        bytes.extend(words(reference.values.len()));
        bytes.push(u8::from(reference.indices.is_some()));
        for &i in reference.indices.iter().flatten() {
            bytes.extend(words(i));
        }
        for &v in &reference.values {
            bytes.extend(v.to_le_bytes());
        }
        bytes.push(u8::from(reference.own_picks.is_some()));
        let picks = reference.own_picks.as_deref().unwrap_or_default();
        bytes.extend(words(picks.len()));
        for &i in picks {
            bytes.extend(words(i));
        }
        std::fs::write(&file.path, bytes)
            .with_context(|| format!("writing the reference to {}", file.path.display()))?;
        Ok(file)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Deletes the reference files in the temporary folder whose process has ended. Only where
    /// `/proc` says which processes run (Linux); elsewhere nothing is deleted.
    fn delete_orphans() {
        let proc = std::path::Path::new("/proc");
        if !proc.join("self").exists() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(REFERENCE_PREFIX))
                .and_then(|n| n.split_once('-'))
                .and_then(|(pid, _)| pid.parse::<u32>().ok());
            if let Some(pid) = pid
                && !proc.join(pid.to_string()).exists()
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// The reference in the file at `path`.
    pub fn read(path: &std::path::Path) -> Result<run::Reference> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("reading the parent's reference {}", path.display()))?;
        let bad = || anyhow::anyhow!("{} is not a reference this harness wrote", path.display());
        let mut rest = bytes.strip_prefix(REFERENCE_MAGIC).ok_or_else(bad)?;
        let mut take = |n: usize| -> Result<&[u8]> {
            let (head, tail) = rest.split_at_checked(n).ok_or_else(bad)?;
            rest = tail;
            Ok(head)
        };
        let word = |b: &[u8]| -> Result<usize> { Ok(u64::from_le_bytes(b.try_into()?) as usize) };
        let label_len = word(take(8)?)?;
        let label = String::from_utf8(take(label_len)?.to_vec())?;
        let count = word(take(8)?)?;
        let sampled = take(1)? == [1];
        let indices = match sampled {
            true => Some(
                take(count.checked_mul(8).ok_or_else(bad)?)?
                    .chunks_exact(8)
                    .map(word)
                    .collect::<Result<Vec<_>>>()?,
            ),
            false => None,
        };
        let values = take(count.checked_mul(8).ok_or_else(bad)?)?
            .chunks_exact(8)
            .map(|b| Ok(f64::from_le_bytes(b.try_into()?)))
            .collect::<Result<Vec<_>>>()?;
        let with_picks = take(1)? == [1];
        let picks = word(take(8)?)?;
        let own_picks = take(picks.checked_mul(8).ok_or_else(bad)?)?
            .chunks_exact(8)
            .map(word)
            .collect::<Result<Vec<_>>>()?;
        // Nothing may follow the values: a longer file is not one this code wrote.
        if !rest.is_empty() {
            return Err(bad());
        }
        Ok(run::Reference {
            values,
            indices,
            label,
            own_picks: with_picks.then_some(own_picks),
        })
    }
}

impl Drop for ReferenceFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The parent `kernel` is timed against, and the timings of the two rows (which size the
/// rounds' samples).
#[derive(Debug, Serialize, Deserialize)]
pub struct PairRequest {
    pub against: String,
    pub against_timing: Timing,
    pub row_timing: Timing,
}

/// The child's answer: the row as the parent would have recorded it in its own process, or
/// the rounds of a pair.
#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    Row(Box<Row>),
    Paired(PairedTiming),
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Response {
    pub protocol: u32,
    pub answer: Answer,
}

/// Runs `row`'s kernel on `shape` in a child process and returns its row; a child that times
/// out, crashes or answers nothing gives `row` (the row as prepared, not yet run) with the
/// status `error` and the reason.
///
/// `reference`: the shape's reference in a file ([`ReferenceFile`]), which the child reads
/// instead of computing it.
pub fn run_row(
    policy: &Policy,
    dev: &dyn Executor,
    mut row: Row,
    shape: &Shape,
    timing: Option<TimingConfig>,
    reference: Option<&std::path::Path>,
) -> Row {
    let request = Request {
        protocol: PROTOCOL,
        device: dev.kind().name().to_string(),
        config: policy.config.clone(),
        user_kernels: policy.user_kernels.clone(),
        kernel: row.id.clone(),
        shape: *shape,
        timing,
        sim_blocks: policy.sim_blocks,
        pair: None,
        reference: reference.map(std::path::Path::to_path_buf),
        row_timeout_s: Some(policy.timeout.as_secs_f64()),
    };
    match in_child(&request, policy.timeout) {
        Ok(Answer::Row(r)) => *r,
        Ok(Answer::Paired(_)) => {
            row.status = Status::Error;
            row.reason = Some("the child process answered a pair for a row".into());
            row
        }
        Err(why) => {
            row.status = Status::Error;
            row.reason = Some(format!("{why:#}"));
            row
        }
    }
}

/// Times rung `row` against its parent `against` in alternating rounds in a child process,
/// each given with its own row's timing; a timeout, crash or failure is an error (the caller
/// falls back to the two rows' medians).
pub fn run_pair(
    policy: &Policy,
    dev: &dyn Executor,
    shape: &Shape,
    row: (&str, &Timing),
    against: (&str, &Timing),
    cfg: TimingConfig,
) -> Result<PairedTiming> {
    let request = Request {
        protocol: PROTOCOL,
        device: dev.kind().name().to_string(),
        config: policy.config.clone(),
        user_kernels: policy.user_kernels.clone(),
        kernel: row.0.to_string(),
        shape: *shape,
        timing: Some(cfg),
        sim_blocks: policy.sim_blocks,
        pair: Some(PairRequest {
            against: against.0.to_string(),
            against_timing: against.1.clone(),
            row_timing: row.1.clone(),
        }),
        reference: None,
        row_timeout_s: Some(policy.timeout.as_secs_f64()),
    };
    match in_child(&request, policy.timeout)? {
        Answer::Paired(p) => Ok(p),
        Answer::Row(r) => bail!(
            "the child process answered a row ({}) for a pair",
            r.reason.unwrap_or_else(|| format!("{:?}", r.status))
        ),
    }
}

/// Why an isolated row has no answer.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("timed out after {} s (the child process was killed)", .0.as_secs_f64())]
    TimedOut(Duration),
    #[error("the child process crashed: {0}{1}")]
    Crashed(String, String),
    #[error("the child process answered no row ({0}){1}")]
    NoAnswer(String, String),
}

/// The most lines of a row's own output (a kernel's `printf`) shown.
const PRINTF_LINES: usize = 20;

/// What the row's kernel printed (device `printf`, in the simulator or on a GPU), which the
/// child's stdout carries beside its answer: shown on stderr under the row's name, the first
/// [`PRINTF_LINES`] lines of it (a kernel printing from every thread prints a lot).
fn forward_printf(out: &str, request: &Request) {
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with(MARKER)).collect();
    if lines.is_empty() {
        return;
    }
    eprintln!("{} at {} printed:", request.kernel, request.shape.label());
    for l in lines.iter().take(PRINTF_LINES) {
        eprintln!("  | {l}");
    }
    if lines.len() > PRINTF_LINES {
        eprintln!("  | ... {} more lines", lines.len() - PRINTF_LINES);
    }
}

fn in_child(request: &Request, timeout: Duration) -> Result<Answer> {
    let exe = std::env::current_exe().context("locating the harness binary for a child")?;
    let mut cmd = Command::new(exe);
    cmd.arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group: a timeout kills the child and whatever it started (a compiler).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .context("starting a child process for the row")?;
    let mut stdin = child.stdin.take().context("the child's stdin")?;
    stdin.write_all(serde_json::to_string(request)?.as_bytes())?;
    drop(stdin);
    // Read both pipes while waiting, so a child that prints much never blocks on a full pipe.
    let stdout = reader(child.stdout.take());
    let stderr = reader(child.stderr.take());
    let status = match wait(&mut child, timeout) {
        Some(s) => s,
        None => {
            kill(&mut child);
            return Err(ChildError::TimedOut(timeout).into());
        }
    };
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    forward_printf(&out, request);
    if let Some(line) = out.lines().rev().find_map(|l| l.strip_prefix(MARKER)) {
        let response: Response =
            serde_json::from_str(line).context("reading the child process's row")?;
        if response.protocol != PROTOCOL {
            bail!(
                "the child process speaks protocol {}, this harness {PROTOCOL}",
                response.protocol
            );
        }
        return Ok(response.answer);
    }
    // The last thing the child said is usually why it stopped.
    let said = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default();
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return Err(ChildError::Crashed(kernel::child_process::signal_name(sig), said).into());
    }
    Err(ChildError::NoAnswer(status.to_string(), said).into())
}

fn reader(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut p) = pipe {
            let mut bytes = Vec::new();
            let _ = p.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// The child's exit status, or `None` if it is still running after `timeout`.
fn wait(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() >= timeout => return None,
            Ok(None) => {}
            Err(_) => return None,
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        let pgid = child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals the process group we created for the
        // child (`process_group(0)` made its id the group's), nothing else.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The child: reads a [`Request`] on stdin, runs the row, prints a [`Response`] line.
pub fn child() -> Result<bool> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading the row request on stdin")?;
    let request: Request = serde_json::from_str(&text).context(
        "this subcommand is the harness's own: it runs one row for `harness run`/`check`",
    )?;
    if request.protocol != PROTOCOL {
        bail!(
            "the parent speaks protocol {}, this harness {PROTOCOL}",
            request.protocol
        );
    }
    let answer = match &request.pair {
        Some(pair) => Answer::Paired(child_pair(&request, pair)?),
        None => Answer::Row(Box::new(child_row(&request)?)),
    };
    let response = Response {
        protocol: PROTOCOL,
        answer,
    };
    println!("{MARKER}{}", serde_json::to_string(&response)?);
    Ok(true)
}

/// Opens the request's device, loads the lab's kernels and the user's, and gives them to `f`
/// with the config.
fn with_kernels<T>(
    request: &Request,
    f: impl FnOnce(&dyn Executor, &[&dyn Kernel], &Config) -> Result<T>,
) -> Result<T> {
    let config = load_config(&request.config)?;
    let kind = select::parse_kind(&request.device)?;
    let dev: Box<dyn Executor> = match (kind, request.row_timeout_s) {
        (DeviceKind::Sim, Some(limit)) => {
            // A launch still running a moment before the parent kills this process is stopped
            // by the simulator, which says which threads wait on what.
            let limit = Duration::from_secs_f64(limit);
            let margin = (limit / 10).min(Duration::from_secs(3));
            let deadline = Instant::now() + limit.saturating_sub(margin);
            Box::new(select::simulator(request.sim_blocks)?.with_deadline(deadline))
        }
        _ => select::open(Some(kind), request.sim_blocks)?.0,
    };
    let all = tune::lab_kernels(dev.info(), &LabDir::locate());
    let specs = user_kernel::specs(&config.kernels, &request.user_kernels)?;
    // Only the kernels this row times: the run's others may be of other workloads.
    let mut ids = vec![request.kernel.as_str()];
    ids.extend(request.pair.as_ref().map(|p| p.against.as_str()));
    let users = user_kernel::load_only(&specs, &ids, &request.shape, Some(dev.info()))?;
    let mut kernels: Vec<&dyn Kernel> = all.iter().map(|k| k.as_ref()).collect();
    kernels.extend(users.iter().map(|u| u as &dyn Kernel));
    f(dev.as_ref(), &kernels, &config)
}

fn kernel_named<'a>(kernels: &[&'a dyn Kernel], id: &str) -> Result<&'a dyn Kernel> {
    match kernels.iter().find(|k| k.info().id == id) {
        Some(&k) => Ok(k),
        None => bail!("no kernel {id:?} in the child process"),
    }
}

fn child_row(request: &Request) -> Result<Row> {
    with_kernels(request, |dev, kernels, config| {
        let kernel = kernel_named(kernels, &request.kernel)?;
        let shape = &request.shape;
        let inputs = inputs::random_inputs(shape, config.seed);
        let reference = match &request.reference {
            Some(file) => ReferenceFile::read(file)?,
            None => run::reference_for(dev, kernels, shape, &inputs, config),
        };
        Ok(run::row_for(
            dev,
            kernel,
            shape,
            &inputs,
            &reference,
            request.timing,
            &mut |_, _, p, cfg| timing::measure(p, cfg),
        ))
    })
}

fn child_pair(request: &Request, pair: &PairRequest) -> Result<PairedTiming> {
    with_kernels(request, |dev, kernels, config| {
        let row = kernel_named(kernels, &request.kernel)?;
        let parent = kernel_named(kernels, &pair.against)?;
        let cfg = request.timing.context("a pair request names no timing")?;
        let shape = &request.shape;
        let inputs = inputs::random_inputs(shape, config.seed);
        Ok(run::time_pair(
            dev,
            (parent, &pair.against_timing),
            (row, &pair.row_timing),
            shape,
            &inputs,
            &cfg,
        )?)
    })
}

/// The isolation options of `harness run` and `harness check`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct IsolationArgs {
    /// Run every row in a child process of its own (on a GPU, every rung `list --risky` names
    /// always does, and every user kernel on a GPU or in the simulator): a row that hangs or faults is recorded as such and the run
    /// goes on.
    #[arg(long)]
    pub isolate: bool,
    /// The most seconds an isolated row may take before its process is killed and the row
    /// recorded as timed out [default: 120].
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub row_timeout: Option<Duration>,
}

impl IsolationArgs {
    /// Sets the process's [`Policy`] from these flags, for a run on a device of `kind`; says
    /// so when `--row-timeout` can limit no row of it (no row runs in a child).
    pub fn apply(
        &self,
        kind: DeviceKind,
        config: Option<PathBuf>,
        user_kernels: &[String],
        user_ids: Vec<String>,
        sim_blocks: Option<usize>,
    ) {
        let none_isolated = !self.isolate
            && match kind {
                DeviceKind::Cuda => false,
                DeviceKind::Sim => user_ids.is_empty(),
                DeviceKind::Cpu => true,
            };
        if self.row_timeout.is_some() && none_isolated {
            println!(
                "--row-timeout: no row of this run has a process of its own to limit (on the \
                 CPU, and for the lab's rungs in the simulator, only --isolate gives one), so \
                 it limits none"
            );
        }
        set_policy(Some(Policy {
            all_rows: self.isolate,
            timeout: self.row_timeout.unwrap_or(DEFAULT_TIMEOUT),
            config,
            user_kernels: user_kernels.to_vec(),
            user_ids,
            sim_blocks,
        }));
    }
}

/// The range `--row-timeout` takes, in seconds: a row's process needs some time to start, and
/// a day is more than any row the lab runs.
const ROW_TIMEOUT_SECONDS: std::ops::RangeInclusive<f64> = 0.1..=86400.0;

/// `--row-timeout` as given: seconds, whole or not.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let s: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !ROW_TIMEOUT_SECONDS.contains(&s) {
        return Err(format!(
            "{text:?}: a row's time limit is from {} to {} seconds",
            ROW_TIMEOUT_SECONDS.start(),
            ROW_TIMEOUT_SECONDS.end()
        ));
    }
    Ok(Duration::from_secs_f64(s))
}
