package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Timespan;

/** A lease ran out: its remote key was revoked. */
@Name("dev.jrdma.LeaseEnded")
@Label("Lease Ended")
@Category({"jrdma"})
@Description("A lease ran out: its remote key was revoked.")
final class LeaseEndedEvent extends RemoteKeyEvent {
    @Label("Lease")
    @Timespan(Timespan.MILLISECONDS)
    long leaseMillis;
}
