package dev.jrdma.examples.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The gRPC example as a user runs it: the server and the client in two JVMs of this host (so
 * jrdma's "auto" picks shm between them, or verbs where there is a device), the client's call
 * answered, the server stopped by the end of its input.
 */
class HelloGrpcTest {
    @Test
    @Timeout(180)
    void theClientIsGreetedByTheServerInAnotherProcess() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("java.class.path");
        Process server = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                HelloGrpcServer.class.getName(), "127.0.0.1", "0").redirectErrorStream(true).start();
        try {
            BufferedReader serverOut = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String listening;
            StringBuilder before = new StringBuilder();
            while ((listening = serverOut.readLine()) != null && !listening.startsWith("listening on ")) {
                before.append(listening).append('\n');   // the JVM's own warnings, if any
            }
            assertNotNull(listening, "the server printed no address: " + before);
            Matcher m = Pattern.compile("^listening on /127\\.0\\.0\\.1:(\\d+) \\((shm|tcp|verbs)\\)$").matcher(listening);
            assertTrue(m.matches(), listening);

            Process client = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", cp,
                    HelloGrpcClient.class.getName(), "127.0.0.1", m.group(1), "jrdma").redirectErrorStream(true).start();
            String clientOut = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(client.waitFor(60, TimeUnit.SECONDS), clientOut);
            assertEquals(0, client.exitValue(), clientOut);
            assertTrue(clientOut.lines().anyMatch("the server said: Hello, jrdma"::equals), clientOut);

            server.getOutputStream().close();   // the end of its input stops it
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "the server did not stop");
            String rest = serverOut.lines().reduce("", (a, b) -> a + b + "\n");
            assertEquals(0, server.exitValue(), rest);
            assertTrue(rest.lines().anyMatch("stopped"::equals), rest);
        } finally {
            server.destroyForcibly();
        }
    }

    /** The hand-written messages are protobuf's encoding, and a request that is not one is refused as INVALID_ARGUMENT. */
    @Test
    void theMessagesAreProtobufsAndWhatIsNotOneIsRefused() throws Exception {
        byte[] hello = Greeter.ONE_STRING.stream("world").readAllBytes();
        assertEquals("0a05776f726c64", java.util.HexFormat.of().formatHex(hello));   // protoc's bytes for name: "world"
        String long300 = "x".repeat(300);
        assertEquals(long300, Greeter.ONE_STRING.parse(Greeter.ONE_STRING.stream(long300)));
        assertEquals("", Greeter.ONE_STRING.parse(new ByteArrayInputStream(new byte[0])));
        for (byte[] bad : new byte[][] {{0x12, 0x01, 0x41}, {0x0a, 0x05, 0x41}, {0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x01},
                new byte[Greeter.MAX_STRING + 10]}) {
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
                    () -> Greeter.ONE_STRING.parse(new ByteArrayInputStream(bad)));
            assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.getMessage());
        }
        assertThrows(StatusRuntimeException.class, () -> Greeter.ONE_STRING.stream("y".repeat(Greeter.MAX_STRING + 1)));
    }
}
