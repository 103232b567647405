package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.collective.RdmaLib;
import dev.jrdma.examples.alltoall.RdmaLibClient;
import dev.jrdma.examples.alltoall.RdmaLibServer;

import java.io.File;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** rdma_lib's demo as its users run it: a server and two clients, three processes of this host, default provider. */
class RdmaLibDemoTest {
    static String classPath() throws Exception {
        return Path.of(RdmaLib.class.getProtectionDomain().getCodeSource().getLocation().toURI()) + File.pathSeparator
                + Path.of(RdmaLibServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    static Process start(Class<?> main, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", classPath(), main.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    static String finish(Process p) throws Exception {
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "the process ended");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    @Timeout(180)
    void aServerAndTwoClientsEndWithEveryonesMessage() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Process server = start(RdmaLibServer.class, "127.0.0.1", String.valueOf(port));
        // As the demo is run: the clients start once the server listens (it says it waits).
        StringBuilder serverOut = new StringBuilder();
        java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        for (String line; (line = r.readLine()) != null; ) {
            serverOut.append(line).append('\n');
            if (line.startsWith("Waiting for client 1")) {
                break;
            }
        }
        assertTrue(serverOut.toString().contains("Waiting for client 1"), serverOut.toString());
        Process one = start(RdmaLibClient.class, "1", "127.0.0.1", String.valueOf(port));
        Process two = start(RdmaLibClient.class, "2", "127.0.0.1", String.valueOf(port));
        String s = serverOut + finish(server), c1 = finish(one), c2 = finish(two);
        System.out.print(s + c1 + c2);
        Matcher m = Pattern.compile("Received combined messages: '(.*)'").matcher(s);
        assertTrue(m.find(), s);
        String combined = m.group(1);
        // Clients are peers in the order they were accepted: either may be first.
        assertTrue(combined.equals("Server Message; Client 1 Message; Client 2 Message;")
                || combined.equals("Server Message; Client 2 Message; Client 1 Message;"), combined);
        assertTrue(c1.contains("Received start signal: START") && c1.contains("Received combined: '" + combined + "'"), c1);
        assertTrue(c2.contains("Received combined: '" + combined + "'"), c2);
    }
}
