package dev.jrdma;

import org.junit.jupiter.api.Tag;

/** {@link RdmaServingConformance} on real verbs: Soft-RoCE in the VM (or a real NIC). */
@Tag("verbs")
class RdmaServingVerbsTest extends RdmaServingConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }
}
