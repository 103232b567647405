package dev.jrdma;

/** {@link Ipv6Conformance} on verbs. */
@org.junit.jupiter.api.Tag("verbs")
class Ipv6VerbsTest extends Ipv6Conformance {
    @Override
    protected Transport transport() {
        return Transport.verbsOverIpv6();
    }
}
