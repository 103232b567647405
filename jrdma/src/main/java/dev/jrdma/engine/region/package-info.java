/**
 * What outlives a region's own calls: the timer that ends its leases ({@code LeaseTimer}: one
 * thread per {@code Rdma}, started by the first lease and stopped by the {@code Rdma}'s close),
 * and leak detection ({@code LeakDetector}: regions dropped without close, found through the
 * garbage collector). Any thread may schedule a lease or watch a region; a lease's end runs on
 * the timer's thread. Internal: not exported.
 */
package dev.jrdma.engine.region;
