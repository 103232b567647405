/**
 * JDK Flight Recorder events: what jrdma's connections and regions do, for a recording to show
 * beside the JVM's own events. Every event is named {@code dev.jrdma.*}; all are on by default in
 * a recording except {@code dev.jrdma.OperationLatency}, which is sampled from the data path and
 * must be enabled. {@link dev.jrdma.jfr.JrdmaEvents} is what the library calls; with no recording
 * running each call costs a check of a flag. Internal: a recording names the events, not these
 * classes.
 */
package dev.jrdma.jfr;
