package dev.jrdma;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A multicast group of three tcp datagram endpoints on 127.0.0.1, .2 and .3, run by
 * {@link DatagramTcpTest} in a network namespace of its own whose {@code lo} has the MULTICAST
 * flag. Exits 0 and prints "ok" when every member received the group's datagram (the sender
 * too), a member that left received no more, and a member answered the sender; else exits 1
 * saying what went wrong.
 */
final class DatagramMulticastMain {
    private static final Duration T = Duration.ofSeconds(20);

    private DatagramMulticastMain() {
    }

    public static void main(String[] args) throws Exception {
        InetAddress group = InetAddress.getByName("239.77.0.3");
        List<Rdma> all = new ArrayList<>();
        try {
            List<DatagramEndpoint> eps = new ArrayList<>();
            List<DatagramAddress> joined = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Rdma r = Rdma.builder().provider("tcp").build();
                all.add(r);
                DatagramEndpoint e = r.datagramEndpoint(new InetSocketAddress("127.0.0." + (i + 1), 0), 8);
                eps.add(e);
                joined.add(e.join(group).get(T.toSeconds(), TimeUnit.SECONDS));
            }
            send(eps.get(0), joined.get(0), all.get(0), "to the group");
            for (int i = 0; i < 3; i++) {
                try (Datagram d = eps.get(i).receive(T)) {
                    expect("to the group", DatagramConformance.text(d), "member " + i);
                    expect("/127.0.0.1", String.valueOf(d.sender().address().getAddress()), "member " + i + "'s sender");
                }
            }
            eps.get(2).leave(joined.get(2));
            send(eps.get(0), joined.get(0), all.get(0), "after one left");
            for (int i = 0; i < 2; i++) {
                try (Datagram d = eps.get(i).receive(T)) {
                    expect("after one left", DatagramConformance.text(d), "member " + i);
                    if (i == 1) {
                        send(eps.get(1), d.sender(), all.get(1), "ack from 1");
                    }
                }
            }
            try (Datagram ack = eps.get(0).receive(T)) {
                expect("ack from 1", DatagramConformance.text(ack), "the answer to the sender");
            }
            try (Datagram none = eps.get(2).receive(Duration.ofMillis(500))) {
                throw new AssertionError("member 2 left, yet received " + DatagramConformance.text(none));
            } catch (dev.jrdma.exceptions.RdmaTimeoutException expected) {
                // nothing came: right
            }
            System.out.println("ok");
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(1);
        } finally {
            for (Rdma r : all) {
                r.close();
            }
        }
    }

    private static void send(DatagramEndpoint e, DatagramAddress to, Rdma rdma, String text) throws Exception {
        e.send(to, DatagramConformance.filled(rdma, text.getBytes(StandardCharsets.US_ASCII))).get(T.toSeconds(), TimeUnit.SECONDS);
    }

    private static void expect(String want, String got, String what) {
        if (!want.equals(got)) {
            throw new AssertionError(what + ": expected \"" + want + "\", got \"" + got + "\"");
        }
    }
}
