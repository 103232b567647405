package dev.jrdma;

import org.junit.jupiter.api.Tag;

/** {@link RdmaApiConformance} on real verbs: Soft-RoCE in the VM (or a real NIC). */
@Tag("verbs")
class RdmaApiVerbsTest extends RdmaApiConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }
}
