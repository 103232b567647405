package dev.jrdma;

/** {@link RegisteredMemoryConformance} on real verbs: Soft-RoCE in the VM (or a real NIC). */
@org.junit.jupiter.api.Tag("verbs")
class RegisteredMemoryVerbsTest extends RegisteredMemoryConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }
}
