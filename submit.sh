#!/usr/bin/env bash
# Run jobs/dedupe.py with spark-submit from the project's environment.
#
#   ./submit.sh [spark-submit options] --input PATH --output DIR [job options]
#   ./submit.sh --help                           the job's options
#   ./submit.sh [spark-submit options] jobs/index.py compact --index DIR    another script
#
# The application is jobs/dedupe.py unless the first word that is not spark-submit's names a
# Python file, as in spark-submit's own syntax: then that script runs with the words after it
# (the Airflow DAG runs both of its scripts this way, with this file as its spark-submit).
#
# spark-submit's own options (--master, --deploy-mode, --conf, --executor-memory, ... see
# SPARK_VALUE_OPTIONS below) go to spark-submit wherever they stand; everything else goes to
# the job. So `--master` here is spark-submit's (the job's own --master is for running it with
# plain python). Defaults and environment:
#   master            local[*], or $SPARK_MASTER, or --master in $SPARK_SUBMIT_ARGS or on the
#                     command line (the later wins)
#   SPARK_SUBMIT_ARGS further spark-submit options, e.g. "--driver-memory 8g"
#   SIMHASH_VENV      the project's environment (default .venv)
#   SIMHASH_PACK=0    do not ship an environment to a cluster's executors (they have one)
#   SIMHASH_SUBMIT_DRY_RUN=1  print the words spark-submit would get (NUL-separated), run nothing
#   SIMHASH_CLASS_ARCHIVE     the driver's class data sharing archive (default
#                     $venv/driver-classes.jsa, used when it exists; none: no archive)
#   driver memory     in local mode, unless set: a quarter of this machine's, 1-8 GB (said in
#                     one line); a driver that runs out of memory says in one line what to raise
#   driver collector  the parallel garbage collector (-XX:+UseParallelGC), unless a collector is
#                     chosen in --driver-java-options, a --conf, spark-defaults.conf or the JVM's
#                     environment variables (not in cluster deploy mode)
#   driver compiler   in local mode, over texts (not --fingerprint-col): C1 only
#                     (-XX:TieredStopAtLevel=1), unless the compilers are chosen as above
#
# Local mode runs everything from the project's environment. Any other master gets the
# executors' environment packed by scripts/pack_env.sh (cached in build/) and shipped with
# --archives; the executors run its Python (spark.pyspark.python), the driver runs the
# project's own (client mode) or the packed one too (--deploy-mode cluster).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${SIMHASH_VENV:-$here/.venv}
if [ ! -x "$venv/bin/spark-submit" ]; then
  echo "submit.sh: no project environment at $venv; run scripts/bootstrap.sh (or ./quickstart.sh) first" >&2
  exit 2
fi

# The driver (client mode) runs the project's Python; spark-submit also runs it to find
# SPARK_HOME, the pyspark package in it.
export PYSPARK_DRIVER_PYTHON=${PYSPARK_DRIVER_PYTHON:-$venv/bin/python}

# Runs the project's spark-submit with these words (SIMHASH_SUBMIT_DRY_RUN=1, for tests: prints
# them NUL-separated and runs nothing).
submit() {
  if [ "${SIMHASH_SUBMIT_DRY_RUN:-0}" = 1 ]; then
    printf '%s\0' "$venv/bin/spark-submit" "$@"
    exit 0
  fi
  exec "$venv/bin/spark-submit" "$@"
}

# spark-submit's requests about a driver submitted to a standalone cluster (--status ID,
# --kill ID: how Airflow's operator polls and stops the driver it started with this script as
# its spark-submit) run no application: passed on as they are.
for word in "$@"; do
  case $word in
    --status | --status=* | --kill | --kill=*) submit "$@" ;;
  esac
done

# spark-submit options that take a value; none of them is also a job option but --master,
# which is spark-submit's here. Arrays, matched word by word (a list in one string once
# missed the words at its line ends: issue 11, item 7).
SPARK_VALUE_OPTIONS=(--master --deploy-mode --name --conf -c --properties-file --jars --packages
  --exclude-packages --repositories --py-files --files --archives --driver-memory
  --driver-java-options --driver-library-path --driver-class-path --driver-cores
  --executor-memory --executor-cores --num-executors --total-executor-cores --queue
  --principal --keytab --proxy-user)
SPARK_FLAGS=(--verbose --supervise)

# Whether $1 is one of the other arguments.
is_one_of() {
  local word=$1 option
  shift
  for option in "$@"; do
    [ "$word" = "$option" ] && return 0
  done
  return 1
}

master=${SPARK_MASTER:-local[*]}
deploy_mode=""
archives=""
java_options="-Dlog4j.configurationFile=file:$here/conf/log4j2.properties"
application=$here/jobs/dedupe.py
application_given=0
driver_memory=""
properties_file=""
spark_args=()
job_args=()
wants_help=0

# Sorts one list of words into spark-submit's and the job's. `from_env` words (from
# SPARK_SUBMIT_ARGS) all go to spark-submit.
sort_args() {
  local from_env=$1 word name value
  shift
  while (($#)); do
    word=$1
    shift
    name=${word%%=*}
    if [ "$word" = "--" ] && [ "$from_env" = 0 ]; then
      job_args+=("$@")
      return
    elif is_one_of "$word" "${SPARK_FLAGS[@]}"; then
      spark_args+=("$word")
      continue
    elif ! is_one_of "$name" "${SPARK_VALUE_OPTIONS[@]}"; then
      if [ "$from_env" = 1 ]; then
        spark_args+=("$word")
      elif [ "$application_given" = 0 ] && [ ${#job_args[@]} = 0 ] && [[ $word == *.py ]]; then
        application=$word
        application_given=1
      else
        job_args+=("$word")
        case $word in -h | --help) wants_help=1 ;; esac
      fi
      continue
    fi
    if [ "$word" != "$name" ]; then
      value=${word#*=}
    elif (($#)); then
      value=$1
      shift
    else
      echo "submit.sh: $word needs a value" >&2
      exit 2
    fi
    case $name in
      --master) master=$value ;;
      --deploy-mode) deploy_mode=$value ;;
      # Merged with what submit.sh itself passes (spark-submit keeps only the last of each).
      --archives) archives=${archives:+$archives,}$value ;;
      --driver-java-options) java_options="$java_options $value" ;;
      *)
        # What fixes the driver's memory (the later wins, as in spark-submit): local mode
        # sizes it from the machine only when nothing does.
        case $name=$value in
          --driver-memory=*) driver_memory=$value ;;
          --conf=spark.driver.memory=* | -c=spark.driver.memory=*) driver_memory=${value#*=} ;;
          --properties-file=*) properties_file=$value ;;
          # spark-submit keeps one value of the driver's Java options, the last given: this
          # one would replace the options submit.sh passes (the log configuration, the
          # collector, the class archive), or be dropped. Merged into them instead.
          --conf=spark.driver.extraJavaOptions=* | -c=spark.driver.extraJavaOptions=*)
            java_options="$java_options ${value#*=}"
            continue
            ;;
        esac
        spark_args+=("$name" "$value")
        ;;
    esac
  done
}
read -r -a env_words <<<"${SPARK_SUBMIT_ARGS:-}"
sort_args 1 ${env_words[@]+"${env_words[@]}"}
sort_args 0 "$@"

ship=()
case $master in
  local | local\[*)
    # Executors are threads of the driver's JVM: they run the project's environment directly.
    export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$venv/bin/python}
    ;;
  *)
    if [ "${SIMHASH_PACK:-1}" = 0 ]; then
      # The workers have the environment already (e.g. the same .venv path on every host).
      export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$venv/bin/python}
    elif [ "$wants_help" = 0 ]; then
      archive=$("$here/scripts/pack_env.sh")
      # Nothing points the executors at this machine's environment: they run the archive's.
      unset PYSPARK_PYTHON
      archives="$archive#environment${archives:+,$archives}"
      driver_python=$PYSPARK_DRIVER_PYTHON
      [ "$deploy_mode" = cluster ] && driver_python=./environment/bin/python
      ship=(--conf spark.pyspark.python=./environment/bin/python
            --conf "spark.pyspark.driver.python=$driver_python")
    fi
    ;;
esac
# Whether the application is the job (not another script such as jobs/index.py).
runs_the_job=0
[ "${application##*/}" = dedupe.py ] && runs_the_job=1
if [ "$wants_help" = 1 ] && [ "$runs_the_job" = 1 ]; then
  echo "./submit.sh [spark-submit options] --input PATH --output DIR [job options]: spark-submit's"
  echo "options (--master, --deploy-mode, --conf, --executor-memory, ...) go to spark-submit, the"
  echo "rest to the job (README: 'Running on a cluster'). The job's options:"
  echo
fi

# A property's value in the properties file (--properties-file, else spark-defaults.conf): the
# rest of its line after the name and a separator (so spark.driver.memoryOverhead is not
# spark.driver.memory), from the last line that sets it ("" when none).
from_properties_file() {
  local file=${properties_file:-${SPARK_CONF_DIR:-${SPARK_HOME:-/nonexistent}/conf}/spark-defaults.conf}
  [ -f "$file" ] || return 0
  sed -n "s/^[[:space:]]*${1//./\\.}[[:space:]:=][[:space:]:=]*\(.*[^[:space:]]\)[[:space:]]*\$/\1/p" "$file" | tail -n 1
}
[ -n "$driver_memory" ] || driver_memory=${SPARK_DRIVER_MEMORY:-$(from_properties_file spark.driver.memory)}
# The file's driver Java options would be replaced by the --driver-java-options below: they
# come first in it, so that the command line's win where the two set the same thing.
file_java_options=$(from_properties_file spark.driver.extraJavaOptions)
java_options="${file_java_options:+$file_java_options }$java_options"
# Local mode: the driver is every executor too, and Spark gives it 1 GB whatever the machine
# (issue 11, item 6). Unless the user set it, it gets a share of this machine's memory
# (simhash_udf/run/session.py, the same rule as `python jobs/dedupe.py`), said in one line.
case $master in
  local | local\[*)
    if [ -z "$driver_memory" ] && [ "$wants_help" = 0 ]; then
      if sizing=$(cd "$here" && "$venv/bin/python" -m simhash_udf.run.session --local-driver-memory); then
        driver_memory=${sizing%%$'\n'*}
        echo "submit.sh: ${sizing#*$'\n'}" >&2
        spark_args=(--driver-memory "$driver_memory" ${spark_args[@]+"${spark_args[@]}"})
      fi
    fi
    oom_hint="submit.sh: the Spark driver ran out of memory (java.lang.OutOfMemoryError) with driver memory ${driver_memory:-1g}: raise --driver-memory (local mode runs every task in the driver's JVM)"
    ;;
  *)
    oom_hint="submit.sh: the Spark driver ran out of memory (java.lang.OutOfMemoryError) with driver memory ${driver_memory:-1g}: raise --driver-memory (tasks that run out fail on the executors: raise --executor-memory or spark.executor.memoryOverhead for those)"
    ;;
esac
# The driver's JVM runs this at its first OutOfMemoryError, before Spark logs the stack
# traces (and, in local mode, exits with code 52): one line saying what to raise. The text
# goes through the environment (no quoting through two parsers); not in cluster deploy
# mode, where the driver runs elsewhere without it.
if [ "$deploy_mode" != cluster ]; then
  export SIMHASH_OOM_HINT=$oom_hint
  # (The JVM runs each command between semicolons with sh -c: a newline first ends the
  # progress bar's line.)
  java_options="$java_options -XX:OnOutOfMemoryError=\"echo 1>&2; echo \$SIMHASH_OOM_HINT 1>&2\""
  # The driver JVM collects garbage with the parallel (throughput) collector, unless a collector
  # is chosen anywhere the JVM takes options from: two stop it from starting. The rule (and
  # why) is simhash_udf/run/session.py's DRIVER_GC and gc_chosen.
  defaults_file=${properties_file:-${SPARK_CONF_DIR:-${SPARK_HOME:-/nonexistent}/conf}/spark-defaults.conf}
  options_seen="$java_options ${spark_args[*]:-} ${SPARK_SUBMIT_OPTS:-} ${JAVA_TOOL_OPTIONS:-} ${JDK_JAVA_OPTIONS:-} ${_JAVA_OPTIONS:-}"
  if [ -f "$defaults_file" ]; then
    options_seen="$options_seen $(cat "$defaults_file")"
  fi
  if ! grep -Eq -- '-XX:[+-]Use[A-Za-z0-9_]*GC([^A-Za-z0-9_]|$)' <<<"$options_seen"; then
    java_options="$java_options -XX:+UseParallelGC"
  fi
  # A local run over texts compiles with C1 only (a run on --fingerprint-col, or of another
  # script, keeps C2), unless the compilers are chosen anywhere the JVM takes options from:
  # session.py's QUICK_JIT and jit_chosen (why, measured).
  over_texts=$runs_the_job
  for word in ${job_args[@]+"${job_args[@]}"}; do
    case $word in --fingerprint-col | --fingerprint-col=*) over_texts=0 ;; esac
  done
  case $master in
    local | local\[*)
      if [ "$over_texts" = 1 ] && ! grep -Eq -- '-XX:(TieredStopAtLevel=|[+-]TieredCompilation([^A-Za-z0-9_]|$))' <<<"$options_seen"; then
        java_options="$java_options -XX:TieredStopAtLevel=1"
      fi
      ;;
  esac
  # The driver JVM maps the classes a run loads from the environment's class data sharing
  # archive, recorded by ./quickstart.sh (SIMHASH_RECORD_CLASS_ARCHIVE: record one there at
  # exit; SIMHASH_CLASS_ARCHIVE: another archive, or none): seconds off a small run's start. The
  # rule is simhash_udf/run/session.py's class_archive_options (why, and why a stale archive is safe).
  if [ -n "${SIMHASH_RECORD_CLASS_ARCHIVE:-}" ]; then
    java_options="$java_options -XX:ArchiveClassesAtExit=$SIMHASH_RECORD_CLASS_ARCHIVE -Xlog:cds*=off"
  else
    class_archive=${SIMHASH_CLASS_ARCHIVE:-$venv/driver-classes.jsa}
    if [ "$class_archive" != none ] && [ -f "$class_archive" ]; then
      java_options="$java_options -XX:SharedArchiveFile=$class_archive -Xlog:cds*=off"
    fi
  fi
fi

submit --master "$master" ${deploy_mode:+--deploy-mode "$deploy_mode"} \
  --driver-java-options "$java_options" \
  --conf spark.ui.showConsoleProgress=true \
  ${archives:+--archives "$archives"} \
  ${ship[@]+"${ship[@]}"} \
  ${spark_args[@]+"${spark_args[@]}"} \
  "$application" ${job_args[@]+"${job_args[@]}"}
