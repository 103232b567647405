package dev.jrdma.collective;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * What a member of a group with a {@linkplain GroupConfig#secret() secret} shows to prove it holds
 * the secret, without the secret itself going on the wire: HMAC-SHA256 (its first {@value #BYTES}
 * bytes) keyed with the secret over
 * a label saying which step it is for and what the step is about. The connector's proof travels
 * as the connection's auth token (the listener refuses a wrong one, in constant time, before any
 * connection exists); the acceptor's in its accept private data, checked by the connector.
 *
 * <pre>
 * mesh connect:      HMAC(secret, "jrdma PeerGroup connect"    | group id (4) | size (4) | acceptor's rank (4))
 * mesh accept:       HMAC(secret, "jrdma PeerGroup accept"     | group id (4) | size (4) | acceptor's rank (4))
 * rendezvous join:   HMAC(secret, "jrdma PeerGroup rendezvous" | rendezvous address | port (2))
 * rendezvous answer: HMAC(secret, "jrdma PeerGroup host"       | rendezvous address | port (2))
 * </pre>
 *
 * The connect proof names the member it is for: each member's listener takes only its own, so a
 * process that listens on a member's address before that member does (and so is shown the proof
 * by the members that connect there) learns nothing it can show the others. A proof is the same
 * every time for one group, so whoever sees it on the wire can replay it to the same member (not
 * to another member or group, and it does not reveal the secret): run groups
 * across networks you do not trust inside a VPN or IPsec/WireGuard tunnel, as the README says of
 * the auth token.
 */
final class GroupProof {
    /**
     * A proof's length: the HMAC's first 96 bits (as RFC 2104 allows; IPsec's HMAC-SHA1-96 is as
     * long), so that a hello, a proof and the auth token fit the 44 bytes rdma_cm's connect
     * request leaves for them. A guess costs a connection, refused: 2^96 of them are not made.
     */
    static final int BYTES = 12;
    private static final String CONNECT = "jrdma PeerGroup connect", ACCEPT = "jrdma PeerGroup accept",
            JOIN = "jrdma PeerGroup rendezvous", HOST = "jrdma PeerGroup host";

    private GroupProof() {
    }

    /** What a member connecting to {@code acceptor} presents as its auth token. */
    static byte[] meshConnect(byte[] secret, int groupId, int size, int acceptor) {
        return mac(secret, CONNECT, ByteBuffer.allocate(12).putInt(groupId).putInt(size).putInt(acceptor).array());
    }

    /** What member {@code acceptor} answers with, after its hello, in its accept private data. */
    static byte[] meshAccept(byte[] secret, int groupId, int size, int acceptor) {
        return mac(secret, ACCEPT, ByteBuffer.allocate(12).putInt(groupId).putInt(size).putInt(acceptor).array());
    }

    static byte[] rendezvousJoin(byte[] secret, InetSocketAddress rendezvous) {
        return mac(secret, JOIN, address(rendezvous));
    }

    static byte[] rendezvousHost(byte[] secret, InetSocketAddress rendezvous) {
        return mac(secret, HOST, address(rendezvous));
    }

    /** Whether {@code d} ends with {@code proof} at {@code offset}, compared in constant time. */
    static boolean holds(byte[] d, int offset, byte[] proof) {
        if (d == null || d.length < offset + proof.length) {
            return false;
        }
        return MessageDigest.isEqual(java.util.Arrays.copyOfRange(d, offset, offset + proof.length), proof);
    }

    private static byte[] address(InetSocketAddress a) {
        byte[] ip = a.getAddress().getAddress();
        return ByteBuffer.allocate(ip.length + 2).put(ip).putShort((short) a.getPort()).array();
    }

    private static byte[] mac(byte[] secret, String label, byte[] about) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(secret, "HmacSHA256"));
            m.update(label.getBytes(StandardCharsets.US_ASCII));
            return java.util.Arrays.copyOf(m.doFinal(about), BYTES);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK: " + e.getMessage(), e);
        }
    }
}
