package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A region (or a slice) was made reachable by peers: a remote key was made for it. */
@Name("dev.jrdma.RegionExposed")
@Label("Region Exposed")
@Category({"jrdma"})
@Description("A region (or a slice) was made reachable by peers: a remote key was made for it.")
final class RegionExposedEvent extends RemoteKeyEvent {
    @Label("Access")
    String access;
    @Label("Scope")
    @Description("Whom the key serves: every peer, a lease, or one connection")
    String scope;
}
