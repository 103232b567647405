/**
 * The {@code jrdma} command: {@code Main} (global options, {@code --help}, {@code --version},
 * {@code --log}) and {@code devices} (each RDMA device in ibv_devinfo's words, or with none the
 * providers and what auto chooses). {@code perf} and {@code doctor} have packages of their own.
 */
package dev.jrdma.cli;
