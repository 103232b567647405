package dev.jrdma;

import org.junit.jupiter.api.Tag;

/** {@link RdmaOperationsConformance} on real verbs: Soft-RoCE in the VM (or a real NIC). */
@Tag("verbs")
class RdmaOperationsVerbsTest extends RdmaOperationsConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }

    /**
     * 10^5: the emulated VM's rxe moves about 7 000 ON_ERROR writes a second, so 10^6 takes
     * 2.5 minutes of the suite (it passed so, once, by hand); the send queue of 128 is reclaimed
     * some 3 000 times in 10^5 already, which is what the test is about.
     */
    @Override
    protected int onErrorFlood() {
        return 100_000;
    }
}
