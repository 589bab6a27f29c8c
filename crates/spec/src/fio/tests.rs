use super::expr::{eval, is_arithmetic};
use super::*;
use crate::workload::{Job, Source, Workload};

pub(super) fn env(name: &str) -> Option<String> {
    match name {
        "SIZE" => Some("64m".into()),
        "DIR" => Some("/mnt/bench".into()),
        "ncpus" => Some("2".into()),
        _ => None,
    }
}

pub(super) fn no_include(_: &str) -> Result<String, String> {
    Err("no includes here".into())
}

pub(super) fn parse(text: &str) -> Result<FioJobFile, SpecError> {
    parse_fio_job_file(text, "t.fio", &env, &no_include, false)
}

pub(super) fn jobs(f: &FioJobFile) -> Vec<Job> {
    f.file
        .jobs
        .iter()
        .map(|j| f.file.defaults.overlay(j).resolve("job").unwrap())
        .collect()
}

const VENDOR: &str = "\
; a vendor's checklist
[global]
ioengine=libaio
direct=1
size=${SIZE}
directory=$DIR
runtime=30
time_based
group_reporting
norandommap
randrepeat=0

[seq-write]
rw=write
bs=1M
iodepth=16
numjobs=$ncpus

[rand-read]
stonewall
rw=randread
bs=4k
iodepth=32
rate_iops=500

[mixed]
rw=randrw
rwmixwrite=30
blocksize=8k,8k
fsync=32
buffer_compress_percentage=50
";

#[test]
fn a_vendor_file_runs_as_written() {
    let f = parse(VENDOR).unwrap();
    assert!(f.ignored.is_empty());
    assert_eq!(f.file.target.as_deref(), Some("/mnt/bench"));
    let j = jobs(&f);
    assert_eq!(j.len(), 3);
    assert_eq!(j[0].name, "seq-write");
    assert_eq!(j[0].rw.name(), "write");
    assert_eq!((j[0].bs.min, j[0].iodepth, j[0].jobs), (1 << 20, 16, 2));
    assert_eq!(j[0].engine.name(), "io_uring");
    assert_eq!(j[0].direct.name(), "true");
    assert_eq!(j[0].size, Some(64 << 20));
    assert_eq!(j[0].time, Some(std::time::Duration::from_secs(30)));
    // time_based: no pass limit.
    assert_eq!(j[0].io_total, None);
    // rate_iops is each job's in fio: the total is the same over 1 job.
    assert_eq!(j[1].rate_iops, Some(500));
    assert_eq!(j[2].rwmixread, 70);
    assert_eq!(j[2].fsync, 32);
    assert_eq!(j[2].compress_ratio, 2.0);
    // fio runs jobs together until a stonewall: [seq-write] alone, then the other two.
    assert_ne!(j[0].group, j[1].group);
    assert_eq!(j[1].group, j[2].group);
    Workload::new(j, false).unwrap();
}

#[test]
fn without_time_based_a_runtime_stops_at_one_pass_or_the_runtime() {
    let f = parse("[j]\nrw=read\nsize=4g\nnrfiles=4\nruntime=60\n").unwrap();
    let j = &jobs(&f)[0];
    // fio's size is the job's over its files.
    assert_eq!(j.size, Some(1 << 30));
    assert_eq!(j.io_total, Some(4 << 30));
    // time_based without a runtime waits for one from the command line (the request
    // refuses it without --time).
    let f = parse("[j]\nrw=read\ntime_based\n").unwrap();
    assert_eq!(f.untimed, ["[j] of t.fio"]);
    assert!(parse("[j]\nrw=read\ntime_based\nruntime=5\n")
        .unwrap()
        .untimed
        .is_empty());
}

#[test]
fn comments_aliases_and_shared_names_as_fio_reads_them() {
    let f = parse(
        "[global]\nname=bench\nbs=4k ; the block size\nnumjobs=2\t# one per core\nnr_files=3\nthreads=1\n\
         [a]\nrw=read\nfilename=/tmp/x#1\n[b]\nrw=write\n",
    )
    .unwrap();
    let j = jobs(&f);
    assert_eq!(j[0].bs.min, 4096);
    assert_eq!(j[0].jobs, 2);
    assert_eq!(j[0].files, 3);
    // name= in [global] names both jobs; the second is told apart.
    assert_eq!(
        (j[0].name.as_str(), j[1].name.as_str()),
        ("bench", "bench-2")
    );
    // A # inside a value is the value's.
    assert_eq!(f.file.target.as_deref(), Some("/tmp/x#1"));
    assert!(f.target_is_file);
    Workload::new(j, false).unwrap();
}

#[test]
fn print_fio_says_every_mix_and_the_size_used() {
    let f = parse("[m]\nrw=randrw\nrwmixread=100\n[w]\nrw=randrw\nrwmixwrite=100\n").unwrap();
    let text = to_fio(&jobs(&f), "/mnt/d", true);
    assert!(text.contains("rwmixread=100\n"), "{text}");
    assert!(text.contains("rwmixread=0\n"), "{text}");
    // No size given: the default stormark uses for files it makes, said (fio needs one).
    assert_eq!(text.matches("size=1g\n").count(), 2, "{text}");
    // A file target stays a file.
    let text = to_fio(&jobs(&f), "/mnt/d/file", false);
    assert!(
        text.contains("filename=/mnt/d/file\n") && !text.contains("size="),
        "{text}"
    );
}

#[test]
fn every_option_stormark_does_not_run_is_named_with_its_line() {
    let text = "[global]\nlockmem=1m\n[a]\nrw=randtrimwrite\nbs=4k,64k\n[b]\nioengine=mmap\n";
    let e = parse(text).unwrap_err().to_string();
    for want in [
        "line 2: lockmem",
        "line 4: rw",
        "line 5: bs",
        "line 7: ioengine",
        "--lenient",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
    assert_eq!(e.lines().count(), 1, "{e}");
    let f = parse_fio_job_file(text, "t.fio", &env, &no_include, true).unwrap();
    assert_eq!(
        f.ignored,
        [
            "line 2: lockmem",
            "line 4: rw",
            "line 5: bs",
            "line 7: ioengine"
        ]
    );
}

#[test]
fn variables_cannot_grow_a_line_without_bound() {
    // A 100 kB variable used twenty times in a line: refused, not gigabytes asked for.
    let big = "x".repeat(100_000);
    let env = |name: &str| (name == "BIG").then(|| big.clone());
    let line = format!("[j]\nfilename={}\n", "$BIG".repeat(20));
    let e = parse_fio_job_file(&line, "t.fio", &env, &no_include, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("once its variables are expanded"), "{e}");
    // A line of a file that is no job file is refused by number, its text withheld.
    let e = parse("root:$HOME:x:0\n").unwrap_err().to_string();
    assert!(e.contains("line 1") && !e.contains("root"), "{e}");
}

#[test]
fn units_variables_and_includes() {
    // kb_base=1000: k is 1000.
    let f = parse("[global]\nkb_base=1000\n[j]\nbs=4k\nsize=1m\n").unwrap();
    let j = &jobs(&f)[0];
    assert_eq!((j.bs.min, j.size), (4000, Some(1_000_000)));
    let e = parse("[j]\nsize=$NOPE\n").unwrap_err().to_string();
    assert!(e.contains("$NOPE is not set"), "{e}");
    let inc = |name: &str| -> Result<String, String> {
        match name {
            "common.fio" => Ok("[global]\nbs=64k\niodepth=8\n".into()),
            "loop.fio" => Ok("include loop.fio\n".into()),
            _ => Err("missing".into()),
        }
    };
    let f = parse_fio_job_file(
        "include common.fio\n[j]\nrw=read\n",
        "t.fio",
        &env,
        &inc,
        false,
    )
    .unwrap();
    let j = &jobs(&f)[0];
    assert_eq!((j.bs.min, j.iodepth), (65536, 8));
    let e = parse_fio_job_file("include loop.fio\n", "t.fio", &env, &inc, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nested"), "{e}");
    assert!(parse("bs=4k\n")
        .unwrap_err()
        .to_string()
        .contains("before any section"));
    assert!(parse("; nothing\n")
        .unwrap_err()
        .to_string()
        .contains("no job section"));
}

#[test]
fn print_fio_reads_back_as_the_same_jobs() {
    let f = parse(VENDOR).unwrap();
    let before = jobs(&f);
    let text = to_fio(&before, "/mnt/bench", true);
    let again = parse(&text).unwrap();
    assert!(again.ignored.is_empty(), "{text}");
    let after = jobs(&again);
    assert_eq!(after.len(), before.len());
    for (a, b) in before.iter().zip(&after) {
        let strip = |j: &Job| Job {
            group: None,
            ..j.clone()
        };
        assert_eq!(strip(a), strip(b), "{text}");
    }
    assert_eq!(again.file.target.as_deref(), Some("/mnt/bench"));
}

proptest::proptest! {
    #[test]
    fn fio_files_never_panic(text in "(\\[[a-z]{0,4}\\]\n|[a-z_]{1,10}(=[a-z0-9:,${}-]{0,8})?\n|; x\n){0,12}") {
        let _ = parse_fio_job_file(&text, "p.fio", &env, &no_include, false);
        let _ = parse_fio_job_file(&text, "p.fio", &env, &no_include, true);
    }
}

#[test]
fn lenient_never_changes_the_kind_of_load() {
    let lenient = |text: &str| parse_fio_job_file(text, "t.fio", &env, &no_include, true);
    for engine in [
        "cpuio",
        "net",
        "filestat",
        "filecreate",
        "http",
        "rbd",
        "exec",
    ] {
        let text = format!("[j]\nrw=read\nioengine={engine}\n");
        let e = lenient(&text).unwrap_err().to_string();
        assert!(
            e.contains("ioengine in line 3 of t.fio") && e.contains("not even --lenient"),
            "{engine}: {e}"
        );
    }
    // Another way to do I/O on the same file is left out with --lenient, named.
    let f = lenient("[j]\nrw=read\nioengine=mmap\n").unwrap();
    assert_eq!(f.ignored, ["line 3: ioengine"]);
    assert!(parse("[j]\nrw=read\nioengine=mmap\n").is_err());
}

#[test]
fn loops_number_ios_overwrite_and_fallocate() {
    // Two passes over 64 MiB; at most 1000 I/Os of 4 KiB; laid out first.
    let f = parse(
        "[a]\nrw=read\nsize=64m\nloops=2\n[b]\nrw=randwrite\nbs=4k\nsize=64m\nnumber_ios=1000\noverwrite=1\nfallocate=none\n",
    )
    .unwrap();
    let j = jobs(&f);
    assert_eq!(j[0].io_total, Some(128 << 20));
    assert_eq!(j[1].io_total, Some(1000 * 4096));
    assert_eq!(f.file.prepare, Some(true));
    assert!(parse("[a]\nloops=0\n").is_err());
}

#[test]
fn fios_own_variables_and_arithmetic() {
    let f = parse(
        "[a]\nrw=read\nfilename_format=f.$jobnum.$filenum\nsize=(4*1024*1024)\nbs=2*2048\n\
         filesize=5*1024*1024*$ncpus/8\nbsrange=4096-65536\n",
    )
    .unwrap();
    let j = jobs(&f);
    assert_eq!(j[0].bs.min, 4096);
    assert_eq!(j[0].size, Some(5 * 1024 * 1024 * 2 / 8));
    // A device per job is more than one target: named, not run.
    let e = parse("[a]\nrw=read\nfilename=/dev/sd$jobnum\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 3: filename"), "{e}");
    assert!(parse("[a]\nsize=(1/0)\n").is_err());
    // A share is no remainder.
    assert!(!is_arithmetic("0%") && !is_arithmetic("30%") && is_arithmetic("7%3"));
    assert!(parse("[a]\nsize=(2-5)\n").is_err());
    assert_eq!(eval("2^10 % 1000 + (3 - -2) * 2"), Some(34));
    assert_eq!(eval("((((1))))"), Some(1));
    assert_eq!(eval("9223372036854775807*2"), None);
    assert_eq!(eval("(1"), None);
    assert_eq!(eval("1 2"), None);
    assert!(eval(&"(".repeat(100)).is_none());
    // However long, an expression never runs the stack out.
    assert!(eval(&"2^".repeat(100_000)).is_none());
    assert!(eval(&"-".repeat(100_000)).is_none());
}

#[test]
fn random_distribution_as_fio_writes_it() {
    let f = parse("[z]\nrw=randread\nrandom_distribution=zipf:1.2\n[p]\nrw=randread\nrandom_distribution=pareto:0.2\n[n]\nrw=randread\nrandom_distribution=normal:10\n").unwrap();
    let j = jobs(&f);
    assert_eq!(
        j.iter().map(|j| j.distribution).collect::<Vec<_>>(),
        [
            crate::Distribution::Zipf(1.2),
            crate::Distribution::Pareto(0.2),
            crate::Distribution::Normal(10.0)
        ]
    );
    let text = to_fio(&j, "/mnt/d", true);
    assert!(text.contains("random_distribution=zipf:1.2\n"), "{text}");
    // fio's own limits: theta not 1, h strictly between 0 and 1.
    for bad in [
        "zipf:1",
        "zipf:0",
        "pareto:1",
        "pareto:0",
        "normal:0",
        "zipf",
        "zoned:50/50",
        "zipf:nan",
    ] {
        let e = parse(&format!("[z]\nrandom_distribution={bad}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("zipf:THETA"), "{bad}: {e}");
    }
    // The pairs a job travels as to an agent carry it.
    let pairs = j[0].to_pairs();
    assert!(
        pairs.contains(&("random_distribution", "zipf:1.2".to_string())),
        "{pairs:?}"
    );
}

#[test]
fn bssplit_as_fio_writes_it() {
    let f =
        parse("[b]\nrw=randrw\nbssplit=512/10:4k/60:64k/,512/10:4k/60:64k/30\ndirect=1\n").unwrap();
    let j = &jobs(&f)[0];
    let split = j.bs_split.unwrap();
    assert_eq!(split.entries(), [(512, 10), (4096, 60), (65536, 30)]);
    assert_eq!((j.bs.min, j.bs.max, j.bs_align), (512, 65536, 512));
    let text = to_fio(&jobs(&f), "/mnt/d", true);
    assert!(
        text.contains("bssplit=512/10:4k/60:64k/30\n") && !text.contains("\nbs="),
        "{text}"
    );
    // Shares not adding up to 100 (in either list), a size not a multiple of the alignment:
    // refused with the accepted form.
    for bad in [
        "4k/50:8k/50,16k/90",
        "4k/50:8k/40",
        "4k/50:6000/50",
        "4k",
        "0/100",
    ] {
        let refused = parse(&format!("[b]\nbssplit={bad}\n")).map_or(true, |f| {
            f.file
                .jobs
                .iter()
                .any(|j| f.file.defaults.overlay(j).resolve("b").is_err())
        });
        assert!(refused, "{bad}");
    }
    // JESD219's blockalign past the smallest block: offsets at 4 KiB, blocks from 512 B; a
    // range whose sizes would step by it is refused.
    let f = parse("[j]\nrw=randrw\nbssplit=512/4:4k/96\nblockalign=4k\n").unwrap();
    let j = &jobs(&f)[0];
    assert_eq!((j.bs.min, j.bs_align), (512, 4096));
    assert!(to_fio(&jobs(&f), "/mnt/d", true).contains("ba=4k\n"));
    let f = parse("[j]\nbsrange=512-64k\nblockalign=4k\n").unwrap();
    let e = f.file.defaults.overlay(&f.file.jobs[0]).resolve("j");
    assert!(e.is_err(), "{e:?}");
}

/// Issue 31: fio's `rate` and `rate_iops` cap reads and writes each, per job (each of
/// numjobs): stormark's schedule is the most I/Os a second within both caps, in total.
#[test]
fn rates_as_fio_writes_them() {
    let total = |body: &str| {
        let f = parse(&format!("[r]\n{body}\n")).unwrap();
        jobs(&f)[0].rate_iops
    };
    // 8 MiB/s of 4 KiB reads at 75%, 1 MiB/s of writes at 25%: writes bind (1024 a second),
    // over 2 clones.
    assert_eq!(
        total("rw=randrw\nrwmixread=75\nbs=4k\nnumjobs=2\nrate=8m,1m"),
        Some(2048)
    );
    assert_eq!(total("rw=read\nbs=4k\nrate=1m"), Some(256));
    // Only writes capped: 1 MiB/s of 4 KiB writes at half the I/Os.
    assert_eq!(total("rw=randrw\nbs=4k\nrate=,1m"), Some(512));
    // rate_iops=500 caps each direction: half and half reach 1000 in all.
    assert_eq!(total("rw=randrw\nrate_iops=500"), Some(1000));
    assert_eq!(total("rw=randread\nrate_iops=500\nnumjobs=4"), Some(2000));
    // A bssplit's mean block: 4k and 12k half each, 8 KiB on average.
    assert_eq!(total("rw=read\nbssplit=4k/50:12k/50\nrate=8m"), Some(1024));
    // And --print-fio writes each job's share back as fio reads it.
    let f = parse("[r]\nrw=randrw\nrwmixread=75\nbs=4k\nnumjobs=2\nrate=8m,1m\n").unwrap();
    assert!(to_fio(&jobs(&f), "/d", true).contains("rate_iops=768,256\n"));
    for bad in [
        "rate=fast",
        "rate_iops=0",
        "rate_iops=1.5",
        "rate_iops=3x",
        "rate_iops=k",
    ] {
        assert!(parse(&format!("[r]\n{bad}\n")).is_err(), "{bad}");
    }
    // Issue 55: a count with fio's unit, as fio reads it (3k is 3000).
    assert_eq!(total("rw=randread\nrate_iops=3k"), Some(3000));
    assert_eq!(total("rw=randread\nrate_iops=2K"), Some(2000));
}

#[test]
fn startdelay_as_fio_writes_it() {
    let f = parse(
        "[a]\nrw=read\nruntime=2\ntime_based\n[b]\nrw=write\nstartdelay=1\nruntime=2\ntime_based\n",
    )
    .unwrap();
    let j = jobs(&f);
    assert_eq!(
        (j[0].start_delay, j[1].start_delay),
        (std::time::Duration::ZERO, std::time::Duration::from_secs(1))
    );
    assert!(to_fio(&j, "/mnt/d", true).contains("startdelay=1s\n"));
    assert!(j[1].to_pairs().contains(&("startdelay", "1s".to_string())));
    // fio's random range form is not run: named with its line.
    let e = parse("[a]\nstartdelay=1-5\n").unwrap_err().to_string();
    assert!(e.contains("line 2: startdelay"), "{e}");
}

#[test]
fn a_sequential_step_as_fio_writes_it() {
    let f = parse("[b]\nbs=4k\nrw=read:-8k\n[h]\nrw=write:112k\n").unwrap();
    let j = jobs(&f);
    assert_eq!((j[0].seq_add, j[1].seq_add), (-8192, 112 << 10));
    assert_eq!(j[0].rw_text(), "read:-8k");
    let text = to_fio(&j, "/mnt/d", true);
    assert!(
        text.contains("rw=read:-8k\n") && text.contains("rw=write:112k\n"),
        "{text}"
    );
    assert!(j[0].to_pairs().contains(&("rw", "read:-8k".to_string())));
}

/// fio's `rw=randread:N` (N I/Os from each random offset) and `rw_sequencer`; a run of 0 or
/// a size after a random pattern is refused with the accepted form.
#[test]
fn a_random_run_as_fio_writes_it() {
    let f = parse("[r]\nrw=randread:8\n[s]\nrw=randrw:4\nrw_sequencer=identical\n").unwrap();
    let j = jobs(&f);
    assert_eq!((j[0].rand_run, j[0].rand_run_same), (8, false));
    assert_eq!((j[1].rand_run, j[1].rand_run_same), (4, true));
    let text = to_fio(&j, "/mnt/d", true);
    assert!(text.contains("rw=randread:8\n"), "{text}");
    assert!(
        text.contains("rw=randrw:4\n") && text.contains("rw_sequencer=identical\n"),
        "{text}"
    );
    // The pairs an agent gets run it again.
    let pairs = j[1].to_pairs();
    assert!(pairs.contains(&("rw", "randrw:4".to_string())), "{pairs:?}");
    assert!(pairs.contains(&("rw_sequencer", "identical".to_string())));
    for bad in ["randread:0", "randread:4k", "randread:x"] {
        let e = JobOpts::default()
            .set("rw", bad, Source::Flag)
            .unwrap_err()
            .to_string();
        assert!(e.contains("randread:8"), "{bad}: {e}");
    }
}

/// fio's `offset` and `offset_increment`: each clone's region of one file; an increment as a
/// share of the file is named, not run; an offset off a sector is refused.
#[test]
fn offsets_as_fio_writes_them() {
    let f = parse("[w]\nfilename=/dev/sdx\nbs=64k\nnumjobs=4\noffset=1g\noffset_increment=256m\n")
        .unwrap();
    let j = jobs(&f);
    assert_eq!((j[0].offset, j[0].offset_increment), (1 << 30, 256 << 20));
    assert_eq!(j[0].region_start(3), (1 << 30) + 3 * (256 << 20));
    let text = to_fio(&j, "/dev/sdx", false);
    assert!(
        text.contains("offset=1073741824\noffset_increment=268435456\n"),
        "{text}"
    );
    assert!(j[0]
        .to_pairs()
        .contains(&("offset", "1073741824".to_string())));
    let e = parse("[w]\noffset_increment=50%\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2: offset_increment"), "{e}");
    let e = parse("[w]\nbs=16k\noffset=1000\n").unwrap();
    let e = e
        .file
        .defaults
        .overlay(&e.file.jobs[0])
        .resolve("j")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--offset 1000") && e.contains("512 bytes"),
        "{e}"
    );
    // Any sector, as fio (cross-stripe-verify.fio: 16 KiB blocks from 120 KiB).
    assert_eq!(
        jobs(&parse("[w]\nbs=16k\noffset=120k\n").unwrap())[0].offset,
        120 << 10
    );
}

/// fio's `filename=DIR/name.$jobnum`: a file per job clone, which is what stormark makes in
/// that directory.
#[test]
fn a_file_per_job_clone_is_a_directory() {
    let f = parse("[w]\nfilename=/mnt/d/bench.$jobnum.$filenum\nnumjobs=4\n").unwrap();
    assert_eq!(f.file.target.as_deref(), Some("/mnt/d"));
    assert!(!f.target_is_file);
    let f = parse("[w]\nfilename=bench.$jobnum\n").unwrap();
    assert_eq!(f.file.target, None);
    // A variable part in the directory itself is not run.
    let e = parse("[w]\nfilename=/mnt/$jobnum/f\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2: filename"), "{e}");
}

/// Issue 31: what third-party job files use beside the basics: thinktime, fio's steady state
/// with its window, shares of the device, wait_for_previous, fsync_on_close, times in any
/// case and IEC sizes; each read as fio means it and printed back in fio's keys.
#[test]
fn third_party_options_as_fio_means_them() {
    let f = parse(
        "[global]\nramp_time=2M\nbs=16Ki\n[a]\nrw=randread\nthinktime=1500\nthinktime_spin=200\nthinktime_blocks=4\n\
         steadystate=iops:3%\nsteadystate_duration=1m\nsteadystate_check_interval=10s\n\
         [b]\nwait_for_previous\nrw=randwrite\nsize=95%\nloops=3\noffset=50%\nfsync_on_close=1\nfadvise_hint=0\n",
    )
    .unwrap();
    let j = jobs(&f);
    use std::time::Duration;
    assert_eq!(j[0].ramp, Duration::from_secs(120));
    assert_eq!(j[0].bs.min, 16 << 10);
    assert_eq!(
        (j[0].thinktime, j[0].thinktime_spin, j[0].thinktime_blocks),
        (Duration::from_micros(1500), Duration::from_micros(200), 4)
    );
    assert_eq!(
        j[0].steady_state.map(|s| s.to_string()).as_deref(),
        Some("iops:3%:60s")
    );
    // wait_for_previous is a stonewall: one job after the other, not a group together.
    assert_eq!((&j[0].group, &j[1].group), (&None, &None));
    assert_eq!(
        (j[1].size_pct, j[1].offset_pct, j[1].loops),
        (Some(95), Some(50), Some(3))
    );
    assert!(j[1].end_fsync && !j[1].fadvise_hint && j[0].fadvise_hint);
    // On a device of 1 GiB: 95% of it, from its middle, three passes.
    let on = j[1].on_length(1 << 30, 4096);
    let size = (1u64 << 30) * 95 / 100;
    assert_eq!(
        (on.size, on.offset, on.io_total),
        (Some(size), 1 << 29, Some(3 * size))
    );
    let text = to_fio(&j, "/dev/sdx", false);
    for line in [
        "thinktime=1500\nthinktime_blocks=4\nthinktime_spin=200\n",
        "steadystate=iops:3%\nsteadystate_duration=60s\n",
        "size=95%\nloops=3\n",
        "offset=50%\n",
        "end_fsync=1\nfadvise_hint=0\n",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    let pairs = j[1].to_pairs();
    for p in [
        ("size", "95%"),
        ("offset", "50%"),
        ("loops", "3"),
        ("fadvise_hint", "false"),
    ] {
        assert!(
            pairs.contains(&(p.0, p.1.to_string())),
            "{p:?} in {pairs:?}"
        );
    }
    // fio's Poisson arrivals and its submission thread (stormark keeps the schedule itself).
    let f = parse("[p]\nrate_iops=50\nrate_process=poisson\nio_submit_mode=offload\n").unwrap();
    let p = &jobs(&f)[0];
    assert!(p.rate_poisson && p.rate_iops == Some(50));
    assert!(to_fio(&jobs(&f), "/mnt/d", true).contains("rate_iops=50\nrate_process=poisson\n"));
    assert!(p
        .to_pairs()
        .contains(&("rate_process", "poisson".to_string())));
    // A slope, a forced hint, nowait on and an increment's share: named, not run.
    for line in [
        "steadystate=iops_slope:0.1",
        "fadvise_hint=random",
        "nowait=1",
        "offset_increment=10%",
    ] {
        let e = parse(&format!("[a]\n{line}\n")).unwrap_err().to_string();
        let key = line.split('=').next().unwrap();
        assert!(e.contains(&format!("line 2: {key}")), "{line}: {e}");
    }
}

/// fio's `buffer_pattern`: hex and quoted pieces in a row, printed back as fio reads them;
/// a bare word, an empty or an over-long pattern refused with the form.
#[test]
fn buffer_patterns_as_fio_writes_them() {
    let f = parse("[w]\nrw=write\nbuffer_pattern=0xdeadbeef\"ab\"'c'\n").unwrap();
    let j = jobs(&f);
    let p = j[0].buffer_pattern.unwrap();
    assert_eq!(p.bytes(), b"\xde\xad\xbe\xefabc");
    assert_eq!(p.text(), "0xdeadbeef616263");
    assert!(to_fio(&j, "/mnt/d", true).contains("buffer_pattern=0xdeadbeef616263\n"));
    assert_eq!(crate::FillPattern::parse("0xf").unwrap().bytes(), [0x0f]);
    let long = format!("0x{}", "ab".repeat(513));
    for bad in ["aaaa", "\"\"", "0x", "\"open", long.as_str()] {
        let e = JobOpts::default()
            .set("buffer_pattern", bad, Source::Flag)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0xdeadbeef"), "{bad}: {e}");
    }
    // Zeros and a pattern: one or the other.
    let f = parse("[w]\nrw=write\nzero_buffers=1\nbuffer_pattern=0xff\n").unwrap();
    let e = f
        .file
        .defaults
        .overlay(&f.file.jobs[0])
        .resolve("w")
        .unwrap_err()
        .to_string();
    assert!(e.contains("--buffer-pattern"), "{e}");
}

/// fio's default engine is psync: a job that names none runs one I/O at a time (fio caps its
/// iodepth at 1), not io_uring at its depth; one that names an engine keeps it. fio's libaio
/// queues only O_DIRECT I/O: on buffered files it is psync, said in a note.
#[test]
fn a_job_without_an_engine_runs_fios_default_psync() {
    let f = parse(
        "[a]\nrw=randwrite\niodepth=256\n[b]\nioengine=libaio\niodepth=8\ndirect=1\n\
         [c]\nioengine=libaio\niodepth=8\n[d]\nioengine=libaio\nbuffered=0\n",
    )
    .unwrap();
    let j = jobs(&f);
    assert_eq!(j[0].engine, crate::EngineChoice::Psync);
    assert_eq!(j[1].engine, crate::EngineChoice::IoUring);
    assert_eq!(j[2].engine, crate::EngineChoice::Psync);
    assert_eq!(j[3].engine, crate::EngineChoice::IoUring);
    assert_eq!(f.notes.len(), 1, "{:?}", f.notes);
    assert!(f.notes[0].contains("[c]") && f.notes[0].contains("libaio"));
    assert!(to_fio(&j, "/mnt/d", true).contains("[a]\nioengine=psync\n"));
}

/// Issue 56: `--print-fio` of `direct = "auto"` (the quick and oltp-4k profiles) wrote no
/// `direct=` line, so fio ran buffered what stormark ran direct.
#[test]
fn direct_auto_is_printed_as_direct_for_fio() {
    let f = parse("[j]\nrw=randread\n").unwrap();
    let mut j = jobs(&f);
    j[0].direct = crate::choices::Direct::Auto;
    let text = to_fio(&j, "/mnt/d", true);
    assert!(text.contains("\ndirect=1\n"), "{text}");
    // fio reads it back, the note a comment.
    let again = parse(&text).unwrap();
    assert!(again.ignored.is_empty(), "{text}");
    assert_eq!(jobs(&again)[0].direct, crate::choices::Direct::Yes);
}
