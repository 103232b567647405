package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** A sampled operation, from its post to its completion: off by default; when on, one operation in ConnectionStatistics.LATENCY_SAMPLE_EVERY. */
@Name("dev.jrdma.OperationLatency")
@Label("Operation Latency")
@Category({"jrdma"})
@Description("A sampled operation, from its post to its completion: off by default; when on, one operation in ConnectionStatistics.LATENCY_SAMPLE_EVERY.")
@Enabled(false)
@StackTrace(false)
final class OperationLatencyEvent extends Event {
    @Label("Remote Address")
    String remoteAddress;
    @Label("Operation")
    String operation;
    @Label("Bytes")
    @DataAmount
    long bytes;
    @Label("Latency")
    @Timespan(Timespan.NANOSECONDS)
    long latency;
}
