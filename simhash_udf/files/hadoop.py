"""Paths through Hadoop's FileSystem API (via the JVM): local paths, HDFS and object stores alike."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


def hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(FileSystem, Path) of `path` through the JVM's Hadoop API: local paths, HDFS and object stores alike."""
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs, hpath
