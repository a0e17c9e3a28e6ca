#!/usr/bin/env bash
# Run jobs/dedupe.py with spark-submit from the project's environment.
#
#   ./submit.sh [spark-submit options] --input PATH --output DIR [job options]
#   ./submit.sh --help                           the job's options
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

# spark-submit options that take a value; none of them is also a job option but --master,
# which is spark-submit's here.
SPARK_VALUE_OPTIONS=" --master --deploy-mode --name --conf -c --properties-file --jars --packages
  --exclude-packages --repositories --py-files --files --archives --driver-memory
  --driver-java-options --driver-library-path --driver-class-path --driver-cores
  --executor-memory --executor-cores --num-executors --total-executor-cores --queue
  --principal --keytab --proxy-user "
SPARK_FLAGS=" --verbose --supervise "

master=${SPARK_MASTER:-local[*]}
deploy_mode=""
archives=""
java_options="-Dlog4j.configurationFile=file:$here/conf/log4j2.properties"
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
    elif [[ $SPARK_FLAGS == *" $word "* ]]; then
      spark_args+=("$word")
      continue
    elif [[ $SPARK_VALUE_OPTIONS != *" $name "* ]]; then
      if [ "$from_env" = 1 ]; then
        spark_args+=("$word")
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
      *) spark_args+=("$name" "$value") ;;
    esac
  done
}
read -r -a env_words <<<"${SPARK_SUBMIT_ARGS:-}"
sort_args 1 ${env_words[@]+"${env_words[@]}"}
sort_args 0 "$@"

# The driver (client mode) runs the project's Python; spark-submit also runs it to find
# SPARK_HOME, the pyspark package in it.
export PYSPARK_DRIVER_PYTHON=${PYSPARK_DRIVER_PYTHON:-$venv/bin/python}
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
if [ "$wants_help" = 1 ]; then
  echo "./submit.sh [spark-submit options] --input PATH --output DIR [job options]: spark-submit's"
  echo "options (--master, --deploy-mode, --conf, --executor-memory, ...) go to spark-submit, the"
  echo "rest to the job (README: 'Running on a cluster'). The job's options:"
  echo
fi

exec "$venv/bin/spark-submit" --master "$master" ${deploy_mode:+--deploy-mode "$deploy_mode"} \
  --driver-java-options "$java_options" \
  --conf spark.ui.showConsoleProgress=true \
  ${archives:+--archives "$archives"} \
  ${ship[@]+"${ship[@]}"} \
  ${spark_args[@]+"${spark_args[@]}"} \
  "$here/jobs/dedupe.py" ${job_args[@]+"${job_args[@]}"}
