package dev.jrdma;

import org.junit.jupiter.api.Tag;

/** {@link ReconnectConformance} on real verbs: Soft-RoCE in the VM (rxe0 the server, rxe1 the client). */
@Tag("verbs")
class ReconnectVerbsTest extends ReconnectConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }
}
