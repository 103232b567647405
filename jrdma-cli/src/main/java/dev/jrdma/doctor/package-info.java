/**
 * {@code jrdma doctor}: gathers the facts of this machine ({@code EnvironmentFacts}: JDK, native
 * access, RDMA libraries, devices and GIDs, memlock, Soft-RoCE, huge pages) and turns them into
 * findings with what to fix ({@code Diagnosis}), testable with the facts of machines we do not have.
 */
package dev.jrdma.doctor;
