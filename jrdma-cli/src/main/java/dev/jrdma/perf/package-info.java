/**
 * {@code jrdma perf}: perftest's eight tests (write, read, send and atomic; latency and
 * bandwidth) on jrdma over any provider, with perftest's options and table, JSON, CSV and plots;
 * and the benchmarks that put jrdma beside its anchors (perftest, DiSNI, UCX, Aeron, NIO) in one
 * run, each writing a report under {@code bench/}.
 */
package dev.jrdma.perf;
