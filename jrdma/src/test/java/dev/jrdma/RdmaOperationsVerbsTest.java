package dev.jrdma;

import org.junit.jupiter.api.Tag;

/** {@link RdmaOperationsConformance} on real verbs: Soft-RoCE in the VM (or a real NIC). */
@Tag("verbs")
class RdmaOperationsVerbsTest extends RdmaOperationsConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }
}
