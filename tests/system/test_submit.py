"""`./submit.sh` runs the job through spark-submit, as users run it, quietly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SAMPLE = ROOT / "examples" / "sample.jsonl"


def test_submit_sh_runs_the_job_like_main(spark, dedupe_main, tmp_path):
    env = dict(os.environ, SIMHASH_VENV=str(Path(sys.executable).parent.parent), SPARK_MASTER="local[2]")
    out = tmp_path / "submitted"
    result = subprocess.run(
        [str(ROOT / "submit.sh"), "--input", str(SAMPLE), "--output", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "wrote" in result.stdout and "documents 49" in result.stdout
    # jieba's dictionary loads quietly on the executors, and nothing failed along the way
    # (spark-submit sends the driver's Python stderr to stdout, so both are checked).
    for noise in ("pkg_resources", "Building prefix dict", "Traceback", "ERROR"):
        assert noise not in result.stderr + result.stdout, noise
    # Local mode ships nothing: no environment is packed.
    assert "pack_env" not in result.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["documents"] == 49

    in_process = tmp_path / "in-process"
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(in_process)], spark=spark) == 0
    for name in ("clusters", "pairs", "deduped"):
        a = sorted(map(tuple, spark.read.parquet(str(out / name)).collect()))
        b = sorted(map(tuple, spark.read.parquet(str(in_process / name)).collect()))
        assert a == b, name


def test_submit_sh_explains_a_missing_environment(tmp_path):
    env = dict(os.environ, SIMHASH_VENV=str(tmp_path / "no-venv"))
    result = subprocess.run([str(ROOT / "submit.sh"), "--help"], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "bootstrap" in result.stderr


def submit_verbose(*args: str, **env: str) -> subprocess.CompletedProcess:
    """./submit.sh with spark-submit's --verbose, which prints the arguments it parsed and
    those it hands to the job; with the job's --help nothing runs."""
    full_env = dict(os.environ, SIMHASH_VENV=str(Path(sys.executable).parent.parent), **env)
    full_env.pop("SPARK_MASTER", None)
    return subprocess.run([str(ROOT / "submit.sh"), "--verbose", *args], capture_output=True, text=True,
                          env=full_env, timeout=300)


def parsed(stderr: str, name: str) -> str:
    """A value from spark-submit's 'Parsed arguments:' listing."""
    for line in stderr.splitlines():
        if line.strip().startswith(name + " "):
            return line.split(None, 1)[1].strip()
    raise AssertionError(f"{name} not in spark-submit's output:\n{stderr[-3000:]}")


def test_spark_options_go_to_spark_submit_and_the_rest_to_the_job():
    result = submit_verbose(
        "--master", "local[1]", "--k", "4", "--conf=spark.sql.shuffle.partitions=3", "--help",
        SPARK_SUBMIT_ARGS="--master local[2] --driver-memory 1g",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: dedupe.py" in result.stdout and "--min-features" in result.stdout
    # The command line's --master beats SPARK_SUBMIT_ARGS'; the rest of SPARK_SUBMIT_ARGS stays.
    assert parsed(result.stderr, "master") == "local[1]"
    assert parsed(result.stderr, "driverMemory") == "1g"
    assert "(spark.sql.shuffle.partitions,3)" in result.stderr
    # Job options reach the job in their order; the log configuration is still passed.
    assert parsed(result.stderr, "childArgs") == "[--k 4 --help]"
    assert "log4j2.properties" in parsed(result.stderr, "driverExtraJavaOptions")
    assert parsed(result.stderr, "archives") == "null"


def test_a_cluster_master_for_help_packs_nothing_and_a_bare_option_is_an_error():
    # --help needs no executors, so it does not wait for an environment to be packed; nothing
    # connects to the (absent) master either.
    result = submit_verbose("--master", "spark://127.0.0.1:9", "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: dedupe.py" in result.stdout
    assert parsed(result.stderr, "master") == "spark://127.0.0.1:9"
    assert "pack_env" not in result.stderr

    bare = subprocess.run([str(ROOT / "submit.sh"), "--input", "x", "--master"], capture_output=True, text=True,
                          env=dict(os.environ, SIMHASH_VENV=str(Path(sys.executable).parent.parent)))
    assert bare.returncode == 2 and "--master needs a value" in bare.stderr


# Every spark-submit option submit.sh claims to pass on (its SPARK_VALUE_OPTIONS and flags,
# listed in docs/cluster.md), with a value for each. Issue 11, item 7: the words at the ends
# of the list's lines (--packages, --driver-memory, --driver-cores, --queue) went to the job.
OPTION_VALUES = {
    "--master": "local[1]", "--deploy-mode": "client", "--name": "nm", "--conf": "spark.x=1",
    "-c": "spark.y=2", "--properties-file": "props.conf", "--jars": "a.jar",
    "--packages": "org.example:nothing:1.0", "--exclude-packages": "org.example:other",
    "--repositories": "file:///nonexistent/repo", "--py-files": "b.py", "--files": "c.txt",
    "--archives": "d.zip", "--driver-memory": "1g", "--driver-java-options": "-Dfoo=bar",
    "--driver-library-path": "/tmp/lib", "--driver-class-path": "/tmp/cp", "--driver-cores": "1",
    "--executor-memory": "1g", "--executor-cores": "1", "--num-executors": "2",
    "--total-executor-cores": "2", "--queue": "q1", "--principal": "pr", "--keytab": "keytab",
    "--proxy-user": "px",
}
FLAGS = ("--verbose", "--supervise")
# Options whose files must exist for spark-submit (made in tmp_path).
FILE_OPTIONS = ("--properties-file", "--jars", "--py-files", "--files", "--archives", "--keytab")


def script_options() -> tuple[set[str], set[str]]:
    """The option lists as submit.sh spells them (bash arrays)."""
    text = (ROOT / "submit.sh").read_text()
    values = re.search(r"^SPARK_VALUE_OPTIONS=\(([^)]*)\)", text, re.M).group(1).split()
    flags = re.search(r"^SPARK_FLAGS=\(([^)]*)\)", text, re.M).group(1).split()
    return set(values), set(flags)


def test_the_script_passes_on_exactly_the_options_these_tests_check():
    assert script_options() == (set(OPTION_VALUES), set(FLAGS))
    documented = (ROOT / "docs" / "cluster.md").read_text()
    for option in [*OPTION_VALUES, *FLAGS]:
        assert f"`{option}`" in documented, option


def option_words(names: list[str], form: str, tmp_path: Path) -> list[str]:
    """Each option with its value, as `--opt value` or `--opt=value`; files made in tmp_path."""
    words = []
    for name in names:
        value = OPTION_VALUES[name]
        if name in FILE_OPTIONS:
            path = tmp_path / value
            path.write_text("spark.executor.memory 1g\n" if name == "--properties-file" else "")
            value = str(path)
        words += [f"{name}={value}"] if form == "equals" else [name, value]
    return words


def interleave(spark_words: list[str], job_words: list[str]) -> list[str]:
    """Spark's options spread among the job's, two words at a time: where an option stands
    must not matter."""
    mixed, job = [], list(job_words)
    for i in range(0, len(spark_words), 2):
        mixed += spark_words[i:i + 2]
        if job and i % 4 == 0:
            mixed.append(job.pop(0))
    return mixed + job


JOB_WORDS = ["--input", str(SAMPLE), "--k", "4", "--tokenizer", "word", "--help"]


def dry_run(args: list[str], **env: str) -> list[str]:
    """The exact words submit.sh hands to spark-submit (SIMHASH_SUBMIT_DRY_RUN=1: printed, not run)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("SPARK_MASTER", "SPARK_SUBMIT_ARGS", "SPARK_DRIVER_MEMORY")}
    full_env.update(SIMHASH_VENV=str(Path(sys.executable).parent.parent), SIMHASH_SUBMIT_DRY_RUN="1",
                    SIMHASH_PACK="0", **env)
    result = subprocess.run([str(ROOT / "submit.sh"), *args], capture_output=True, text=True, env=full_env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    words = result.stdout.split("\0")
    assert words[-1] == "" and Path(words[0]).name == "spark-submit"
    return words[:-1]


def split_command(words: list[str]) -> tuple[list[str], list[str]]:
    """spark-submit's options and the job's arguments (after jobs/dedupe.py)."""
    at = words.index(str(ROOT / "jobs" / "dedupe.py"))
    return words[1:at], words[at + 1:]


@pytest.mark.parametrize("form", ["space", "equals"])
def test_every_spark_submit_option_reaches_spark_submit_in_either_form(form, tmp_path):
    words = option_words(list(OPTION_VALUES), form, tmp_path) + list(FLAGS)
    spark_words, job = split_command(dry_run(interleave(words, JOB_WORDS)))
    assert job == JOB_WORDS
    pairs = list(zip(spark_words, spark_words[1:]))
    for name, value in OPTION_VALUES.items():
        if name in FILE_OPTIONS:
            value = str(tmp_path / value)
        if name == "--driver-java-options":
            # Merged into the one --driver-java-options submit.sh passes (log configuration).
            merged = [v for n, v in pairs if n == name]
            assert len(merged) == 1 and value in merged[0].split() and "log4j2.properties" in merged[0]
        else:
            assert (name, value) in pairs, (name, spark_words)
    for flag in FLAGS:
        assert flag in spark_words
    # Given --driver-memory, local mode does not size the driver itself.
    assert [v for n, v in pairs if n == "--driver-memory"] == ["1g"]


def verbose_listing(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    result = submit_verbose(*args, "--conf", f"spark.jars.ivy={tmp_path / 'ivy'}")
    assert "Parsed arguments:" in result.stderr, result.stderr[-3000:]
    return result, result.stderr


@pytest.mark.parametrize("form", ["space", "equals"])
def test_spark_submit_itself_parses_every_option_and_the_job_gets_only_its_own(form, tmp_path):
    """Real spark-submit --verbose runs. --proxy-user and --principal exclude each other in
    spark-submit, and --packages resolves packages before the job starts (the package here
    does not exist, so that run stops after parsing): two runs."""
    job = ["--k", "4", "--help"]
    main = [n for n in OPTION_VALUES if n not in ("--packages", "--exclude-packages", "--repositories", "--proxy-user")]
    result, listing = verbose_listing(interleave(option_words(main, form, tmp_path) + ["--supervise"], job), tmp_path)
    assert result.returncode == 0, listing[-3000:]
    assert "usage: dedupe.py" in result.stdout
    expected = {
        "master": "local[1]", "deployMode": "client", "name": "nm", "driverMemory": "1g", "driverCores": "1",
        "executorMemory": "1g", "executorCores": "1", "numExecutors": "2", "totalExecutorCores": "2",
        "queue": "q1", "driverExtraLibraryPath": "/tmp/lib", "driverExtraClassPath": "/tmp/cp",
        "propertiesFile": str(tmp_path / "props.conf"), "supervise": "true", "childArgs": "[--k 4 --help]",
        "jars": f"file:{tmp_path / 'a.jar'}", "pyFiles": f"file:{tmp_path / 'b.py'}",
        "files": f"file:{tmp_path / 'c.txt'}", "archives": f"file:{tmp_path / 'd.zip'}",
    }
    assert {name: parsed(listing, name) for name in expected} == expected
    assert "-Dfoo=bar" in parsed(listing, "driverExtraJavaOptions")
    for prop in ("(spark.x,1)", "(spark.y,2)", "(spark.kerberos.principal,pr)",
                 f"(spark.kerberos.keytab,{tmp_path / 'keytab'})", "(spark.executor.memory,1g)"):
        assert prop in listing, prop

    rest = ["--master", "--packages", "--exclude-packages", "--repositories", "--proxy-user"]
    _, listing = verbose_listing(interleave(option_words(rest, form, tmp_path), job), tmp_path)
    expected = {"packages": "org.example:nothing:1.0", "packagesExclusions": "org.example:other",
                "repositories": "file:///nonexistent/repo", "childArgs": "[--k 4 --help]"}
    assert {name: parsed(listing, name) for name in expected} == expected


def test_local_mode_sizes_the_driver_only_when_nothing_else_does(tmp_path):
    from simhash_udf.run.session import local_driver_memory, physical_memory_bytes

    def driver_memory(args: list[str], **env: str) -> list[str]:
        spark_words, _ = split_command(dry_run([*args, "--input", "x", "--output", "y"], **env))
        return [v for n, v in zip(spark_words, spark_words[1:]) if n == "--driver-memory"]

    share = local_driver_memory(physical_memory_bytes())
    assert driver_memory([]) == [share]
    assert driver_memory(["--master", "local[2]"]) == [share]
    assert driver_memory(["--driver-memory=3g"]) == ["3g"]
    assert driver_memory(["--conf", "spark.driver.memory=3g"]) == []
    assert driver_memory([], SPARK_DRIVER_MEMORY="3g") == []
    assert driver_memory([], SPARK_SUBMIT_ARGS="--driver-memory 3g") == ["3g"]
    props = tmp_path / "p.conf"
    props.write_text("spark.driver.memory  3g\n")
    assert driver_memory(["--properties-file", str(props)]) == []
    # Another property whose name begins alike sets nothing of the driver's memory.
    props.write_text("spark.driver.memoryOverhead 1g\n")
    assert driver_memory(["--properties-file", str(props)]) == [share]
    # A cluster's driver is not this machine's business.
    assert driver_memory(["--master", "spark://127.0.0.1:9"]) == []


@pytest.mark.parametrize("form", ["--conf", "-c=", "properties file"])
def test_the_drivers_java_options_set_as_a_property_reach_the_driver_with_submit_shs(form, tmp_path):
    """spark-submit keeps one value of spark.driver.extraJavaOptions, the last given: a
    `--conf` of it once replaced the options submit.sh passes (the log configuration, the
    collector, the class archive), and the properties file's was replaced by them. What real
    spark-submit parsed holds both (the job's --help: nothing runs)."""
    if form == "properties file":
        props = tmp_path / "p.conf"
        props.write_text("spark.driver.extraJavaOptions   -Dmine=1 -Xss4m \nspark.executor.memory 1g\n")
        words = ["--properties-file", str(props)]
    else:
        words = ["--conf", "spark.driver.extraJavaOptions=-Dmine=1 -Xss4m"] if form == "--conf" else \
            ["-c=spark.driver.extraJavaOptions=-Dmine=1 -Xss4m"]
    result = submit_verbose(*words, "--master", "local[1]", "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    options = parsed(result.stderr, "driverExtraJavaOptions").split()
    assert {"-Dmine=1", "-Xss4m", "-XX:+UseParallelGC"} <= set(options), options
    assert any("log4j2.properties" in option for option in options), options
    # The value arrives whole, in its order.
    assert options.index("-Xss4m") == options.index("-Dmine=1") + 1


def test_a_script_named_before_the_jobs_options_runs_instead_of_the_job():
    """`./submit.sh [spark options] jobs/index.py compact ...`: spark-submit's own syntax, as
    the Airflow DAG calls it with submit.sh as its spark-submit; the driver starts as for the
    job, but compiles with both compilers (only a run over texts gets C1 only)."""
    from simhash_udf.run.session import DRIVER_GC, QUICK_JIT

    result = submit_verbose("--master", "local[1]", str(ROOT / "jobs" / "index.py"), "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: index.py" in result.stdout
    assert parsed(result.stderr, "primaryResource") == f"file:{ROOT / 'jobs' / 'index.py'}"
    assert parsed(result.stderr, "childArgs") == "[--help]"

    env = {name: "" for name in JVM_OPTION_VARIABLES}
    words = dry_run(["--master", "local[2]", "jobs/index.py", "compact", "--index", "x", "--conf", "spark.y=2"], **env)
    at = words.index("jobs/index.py")
    assert words[at + 1:] == ["compact", "--index", "x"] and ("--conf", "spark.y=2") in zip(words, words[1:at])
    java = words[words.index("--driver-java-options") + 1].split()
    assert DRIVER_GC in java and QUICK_JIT not in java
    # The job, named or not, is the run over texts; a .py word after a job option is the job's.
    for args in (["--input", "x.py"], [str(ROOT / "jobs" / "dedupe.py"), "--input", "x.py"]):
        words = dry_run([*args, "--output", "y"], **env)
        assert words[-5:] == [str(ROOT / "jobs" / "dedupe.py"), "--input", "x.py", "--output", "y"]
        assert QUICK_JIT in words[words.index("--driver-java-options") + 1].split()


@pytest.mark.parametrize("request_words", [["--status", "driver-1"], ["--kill=driver-1"]])
def test_a_request_about_a_submitted_driver_goes_to_spark_submit_as_it_is(request_words):
    """Airflow's operator polls (and stops) the driver it submitted to a standalone cluster by
    running its spark-submit, here submit.sh, with --status ID (--kill ID): no job is added."""
    args = ["--master", "spark://127.0.0.1:9", *request_words]
    words = dry_run(args)
    assert words[1:] == args


# The driver's class data sharing archive (simhash_udf/run/session.py, submit.sh, quickstart.sh).

CDS_OPTIONS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "-Xlog:cds")


def class_archive_words(args: list[str], **env: str) -> list[str]:
    """The class data sharing options in the --driver-java-options submit.sh passes."""
    spark_words, _ = split_command(dry_run([*args, "--input", "x", "--output", "y"], **env))
    java = [v for n, v in zip(spark_words, spark_words[1:]) if n == "--driver-java-options"]
    assert len(java) == 1
    return [w for w in java[0].split() if w.startswith(CDS_OPTIONS)]


@pytest.mark.parametrize("case", ["archive", "missing", "off", "record", "cluster driver"])
def test_submit_sh_and_the_session_give_the_driver_the_same_class_archive(case, tmp_path):
    from simhash_udf.run.session import class_archive_options

    archive = tmp_path / "driver-classes.jsa"
    if case != "missing":
        archive.write_bytes(b"only whether the file exists counts here")
    env = {"SIMHASH_CLASS_ARCHIVE": "none" if case == "off" else str(archive)}
    if case == "record":
        env["SIMHASH_RECORD_CLASS_ARCHIVE"] = str(tmp_path / "recorded.jsa")
    args = ["--master", "spark://127.0.0.1:9", "--deploy-mode", "cluster"] if case == "cluster driver" else []
    expected = {
        "archive": [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"],
        "missing": [],
        "off": [],
        "record": [f"-XX:ArchiveClassesAtExit={tmp_path / 'recorded.jsa'}", "-Xlog:cds*=off"],
        # The driver runs on the cluster, with the cluster's JVM: no archive of this machine.
        "cluster driver": [],
    }[case]
    assert class_archive_words(args, **env) == expected
    if case != "cluster driver":
        # python jobs/dedupe.py (session.get_session starting the JVM) passes the same.
        assert class_archive_options(env).split() == expected


JVM_OPTION_VARIABLES = ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
# case: (submit.sh's arguments, the environment, the same choice as get_session's conf)
COLLECTOR_CASES = {
    "none": ([], {}, {}),
    "--driver-java-options": (["--driver-java-options", "-Xss4m -XX:+UseG1GC"], {},
                              {"spark.driver.extraJavaOptions": "-Xss4m -XX:+UseG1GC"}),
    "--conf": (["--conf", "spark.driver.extraJavaOptions=-XX:+UseSerialGC"], {},
               {"spark.driver.extraJavaOptions": "-XX:+UseSerialGC"}),
    "JAVA_TOOL_OPTIONS": ([], {"JAVA_TOOL_OPTIONS": "-XX:+UseZGC"}, {}),
    # A collector's setting, not a choice of collector.
    "not a collector": (["--driver-java-options", "-XX:+UseGCOverheadLimit"], {},
                        {"spark.driver.extraJavaOptions": "-XX:+UseGCOverheadLimit"}),
    "cluster driver": (["--master", "spark://127.0.0.1:9", "--deploy-mode", "cluster"], {}, None),
}


@pytest.mark.parametrize("case", list(COLLECTOR_CASES))
def test_submit_sh_and_the_session_give_the_driver_the_parallel_collector_unless_one_is_chosen(case):
    from simhash_udf.run.session import DRIVER_GC, driver_java_options

    args, env, conf = COLLECTOR_CASES[case]
    env = {**{name: "" for name in JVM_OPTION_VARIABLES}, **env}
    spark_words, _ = split_command(dry_run([*args, "--input", "x", "--output", "y"], **env))
    java = [v for n, v in zip(spark_words, spark_words[1:]) if n == "--driver-java-options"]
    ours = DRIVER_GC in (java[0].split() if java else [])
    # Added only where nothing chose a collector, and never for a driver on the cluster.
    assert ours == (case in ("none", "not a collector"))
    if conf is not None:
        # python jobs/dedupe.py (get_session starting the JVM) decides alike.
        assert (DRIVER_GC in driver_java_options(conf, environ=env).split()) == ours


# case: (submit.sh's arguments, the environment, get_session's conf, its quick_jit)
COMPILER_CASES = {
    "over texts": ([], {}, {}, True),
    "--fingerprint-col": (["--fingerprint-col", "fp"], {}, {}, False),
    "--fingerprint-col=": (["--fingerprint-col=fp"], {}, {}, False),
    "--driver-java-options": (["--driver-java-options", "-XX:TieredStopAtLevel=4"], {},
                              {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"}, True),
    "JAVA_TOOL_OPTIONS": ([], {"JAVA_TOOL_OPTIONS": "-XX:-TieredCompilation"}, {}, True),
    "cluster master": (["--master", "spark://127.0.0.1:9"], {}, None, True),
}


@pytest.mark.parametrize("case", list(COMPILER_CASES))
def test_submit_sh_and_the_session_compile_with_c1_only_over_texts_in_local_mode(case):
    """A local run over texts gets QUICK_JIT; a run on --fingerprint-col, a driver whose
    compilers are chosen elsewhere, and a cluster's driver do not. get_session decides alike."""
    from simhash_udf.run.session import QUICK_JIT, driver_java_options

    args, env, conf, quick_jit = COMPILER_CASES[case]
    env = {**{name: "" for name in JVM_OPTION_VARIABLES}, **env}
    spark_words, _ = split_command(dry_run([*args, "--input", "x", "--output", "y"], **env))
    java = [v for n, v in zip(spark_words, spark_words[1:]) if n == "--driver-java-options"]
    ours = QUICK_JIT in (java[0].split() if java else [])
    assert ours == (case == "over texts")
    if conf is not None:
        assert (QUICK_JIT in driver_java_options(conf, environ=env, quick_jit=quick_jit).split()) == ours


def test_the_default_class_archive_is_the_environments(tmp_path):
    """Without SIMHASH_CLASS_ARCHIVE, both look for driver-classes.jsa in the environment."""
    from simhash_udf.run.session import CLASS_ARCHIVE_NAME, class_archive_options

    venv = Path(sys.executable).parent.parent
    expected = [f"-XX:SharedArchiveFile={venv / CLASS_ARCHIVE_NAME}", "-Xlog:cds*=off"]
    if not (venv / CLASS_ARCHIVE_NAME).is_file():
        expected = []
    assert class_archive_words([]) == expected
    assert class_archive_options({}, prefix=str(venv)).split() == expected
    (tmp_path / CLASS_ARCHIVE_NAME).write_bytes(b"x")
    assert class_archive_options({}, prefix=str(tmp_path)).split()[0] == f"-XX:SharedArchiveFile={tmp_path / CLASS_ARCHIVE_NAME}"


def run_sample(out: Path, *args: str, python: bool = False, **env: str) -> subprocess.CompletedProcess:
    """The sample through ./submit.sh, or with python jobs/dedupe.py (get_session starts the JVM)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("SPARK_SUBMIT_ARGS", "PYSPARK_SUBMIT_ARGS")}
    full_env.update(SIMHASH_VENV=str(Path(sys.executable).parent.parent), SPARK_MASTER="local[2]", **env)
    if python:
        command = [sys.executable, str(ROOT / "jobs" / "dedupe.py"), "--master", "local[2]", *args]
    else:
        command = [str(ROOT / "submit.sh"), *args]
    result = subprocess.run([*command, "--input", str(SAMPLE), "--output", str(out)],
                            capture_output=True, text=True, env=full_env, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    # The JVM's class-sharing messages are switched off (a stale archive would print one).
    assert "[cds" not in result.stdout + result.stderr
    return result


def test_a_recorded_class_archive_is_mapped_by_later_runs_and_a_damaged_one_is_ignored(tmp_path):
    archive = tmp_path / "driver-classes.jsa"
    run_sample(tmp_path / "recording", SIMHASH_RECORD_CLASS_ARCHIVE=str(archive))
    assert archive.is_file()
    counts = json.loads((tmp_path / "recording" / "report.json").read_text())["counts"]
    # -Xshare:on makes the JVM refuse to start unless it maps the archive: the runs below
    # succeed only because they use it.
    run_sample(tmp_path / "submitted", "--driver-java-options", "-Xshare:on", SIMHASH_CLASS_ARCHIVE=str(archive))
    run_sample(tmp_path / "python", python=True, SIMHASH_CLASS_ARCHIVE=str(archive),
               PYSPARK_SUBMIT_ARGS="--conf spark.driver.extraJavaOptions=-Xshare:on pyspark-shell")
    for run in ("submitted", "python"):
        assert json.loads((tmp_path / run / "report.json").read_text())["counts"] == counts, run
    # An archive the JVM cannot use (damaged here; recorded with other jars after an
    # upgrade) costs nothing but the speed-up.
    archive.write_bytes(b"\0" * 4096)
    run_sample(tmp_path / "damaged", SIMHASH_CLASS_ARCHIVE=str(archive))
    assert json.loads((tmp_path / "damaged" / "report.json").read_text())["counts"] == counts
