/**
 * Registered memory for {@code Rdma.allocate}: {@code RegisteredMemoryPool} registers 4 MiB
 * chunks once and lends blocks of them by size class ({@code SizeClasses}), with per-thread
 * caches, so that allocating and closing cost no registration and no system call;
 * {@code RegistrationCache} registers user memory once per range; {@code MemoryRegistrar} is what
 * one {@code Rdma} registers (pool blocks, the application's memory, on-demand, physical, exposures
 * for peers) and the rules it checks. Any thread may use them. Internal: not exported (the API
 * hands out {@code LocalRegion}s).
 */
package dev.jrdma.memory;
