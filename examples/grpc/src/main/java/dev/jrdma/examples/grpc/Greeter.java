package dev.jrdma.examples.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * gRPC's hello-world service, {@code helloworld.Greeter/SayHello}, without generated code: its
 * {@code HelloRequest} and {@code HelloReply} are each one string in field 1, encoded here by hand
 * as protobuf does, so this service is the one of grpc's own examples on the wire and needs no
 * protoc in the build. With generated stubs, a service runs on jrdma the same way: only the
 * server and channel builders in {@link HelloGrpcServer} and {@link HelloGrpcClient} change.
 */
public final class Greeter {
    /** The longest name or greeting accepted (a request is the peer's input: it is bounded). */
    static final int MAX_STRING = 4096;

    /** One protobuf message holding a string in field 1 (HelloRequest.name, HelloReply.message). */
    static final MethodDescriptor.Marshaller<String> ONE_STRING = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
            if (utf8.length > MAX_STRING) {
                throw Status.INVALID_ARGUMENT.withDescription("a string of " + utf8.length + " bytes, more than "
                        + MAX_STRING).asRuntimeException();
            }
            byte[] out = new byte[1 + 2 + utf8.length];
            int n = 0;
            out[n++] = 0x0a;   // field 1, length-delimited
            if (utf8.length < 0x80) {
                out[n++] = (byte) utf8.length;
            } else {
                out[n++] = (byte) (utf8.length & 0x7f | 0x80);
                out[n++] = (byte) (utf8.length >>> 7);
            }
            System.arraycopy(utf8, 0, out, n, utf8.length);
            return new ByteArrayInputStream(out, 0, n + utf8.length);
        }

        @Override
        public String parse(InputStream stream) {
            try {
                byte[] in = stream.readNBytes(MAX_STRING + 3 + 1);
                if (in.length == 0) {
                    return "";   // every field at its default
                }
                if (in.length > MAX_STRING + 3 || in[0] != 0x0a) {
                    throw invalid("expected one string in field 1 of at most " + MAX_STRING + " bytes");
                }
                int length = 0, n = 1;
                for (int shift = 0; ; shift += 7) {
                    if (n >= in.length || shift > 7) {
                        throw invalid("a bad length");
                    }
                    byte b = in[n++];
                    length |= (b & 0x7f) << shift;
                    if (b >= 0) {
                        break;
                    }
                }
                if (length != in.length - n) {
                    throw invalid("a length of " + length + " for " + (in.length - n) + " bytes");
                }
                return new String(in, n, length, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw Status.INTERNAL.withCause(e).asRuntimeException();
            }
        }

        private RuntimeException invalid(String what) {
            return Status.INVALID_ARGUMENT.withDescription("not a hello message: " + what).asRuntimeException();
        }
    };

    /** {@code rpc SayHello (HelloRequest) returns (HelloReply)}. */
    static final MethodDescriptor<String, String> SAY_HELLO = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName("helloworld.Greeter", "SayHello"))
            .setRequestMarshaller(ONE_STRING)
            .setResponseMarshaller(ONE_STRING)
            .build();

    private Greeter() {
    }

    /** The service: answers "Hello, NAME". */
    public static ServerServiceDefinition service() {
        return ServerServiceDefinition.builder("helloworld.Greeter")
                .addMethod(SAY_HELLO, ServerCalls.asyncUnaryCall((name, reply) -> {
                    reply.onNext("Hello, " + name);
                    reply.onCompleted();
                }))
                .build();
    }

    /** Calls SayHello on {@code channel}, blocking until the reply. */
    public static String sayHello(Channel channel, String name) {
        return ClientCalls.blockingUnaryCall(channel, SAY_HELLO, CallOptions.DEFAULT, name);
    }
}
