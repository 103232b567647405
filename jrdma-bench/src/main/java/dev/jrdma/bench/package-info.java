/**
 * JMH benchmarks of the hot paths: an operation from the call to its completion handler on a
 * provider that does nothing ({@code OperationPathBenchmark}, {@code NoopProvider}), and the pool
 * against registering ({@code PoolVsRegisterBenchmark}); each writes its report under {@code bench/}.
 */
package dev.jrdma.bench;
