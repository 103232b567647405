package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A remote key was revoked: a peer using it is refused from now on. */
@Name("dev.jrdma.RegionRevoked")
@Label("Region Revoked")
@Category({"jrdma"})
@Description("A remote key was revoked: a peer using it is refused from now on. A lease reports LeaseEnded instead.")
final class RegionRevokedEvent extends RemoteKeyEvent {
    @Label("Reason")
    String reason;
}
