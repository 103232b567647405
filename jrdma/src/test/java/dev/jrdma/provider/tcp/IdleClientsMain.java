package dev.jrdma.provider.tcp;

import dev.jrdma.spi.QueuePairSpec;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A child process that opens {@code n} connections to a tcp server, completes each one's
 * handshake with the wire protocol (as another host's peer: no rings) and then holds them idle
 * until its standard input closes. In a process of its own so that the server's process and it
 * each stay under the open-file limit. Each socket lingers 0 s: its end is a reset, so no port
 * is held in TIME_WAIT for the next run.
 *
 * <p>Arguments: host port n. Prints "ready N" once every connection is up (or "failed ..." and
 * exits 1).
 */
public final class IdleClientsMain {
    public static void main(String[] args) throws Exception {
        InetSocketAddress server = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        int n = Integer.parseInt(args[2]);
        QueuePairSpec spec = new QueuePairSpec(64, 64, 1, 1, 0, 16, 16, 7, 6);
        byte[] hello = TcpHandshake.hello(TcpHandshake.HELLO, spec, new byte[16], new byte[0]);
        byte[] ready = TcpHandshake.readyToUse(false);
        List<Socket> held = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) {
                Socket s = new Socket();
                held.add(s);
                s.setSoLinger(true, 0);
                s.setTcpNoDelay(true);
                s.connect(server, 10_000);
                s.setSoTimeout(10_000);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                out.write(hello);
                byte[] h = in.readNBytes(TcpHandshake.HEADER_SIZE);
                if (h.length != TcpHandshake.HEADER_SIZE || TcpHandshake.checkHeader(h) != TcpHandshake.ACCEPT) {
                    throw new IOException("connection " + i + ": the server did not accept");
                }
                in.readNBytes(TcpHandshake.bodyLength(h));
                out.write(ready);
            }
        } catch (IOException | RuntimeException e) {
            System.out.println("failed after " + held.size() + " connections: " + e);
            System.exit(1);
        }
        System.out.println("ready " + held.size());
        System.out.flush();
        while (System.in.read() >= 0) {
            // held until the test closes our input (or ends)
        }
        for (Socket s : held) {
            s.close();
        }
    }
}
