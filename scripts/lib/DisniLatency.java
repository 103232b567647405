/*
 * DiSNI's side of scripts/bench-vs-disni: read_lat and send_lat written against DiSNI 2.1's public API
 * (com.ibm.disni:disni from Maven Central, with its native libdisni on java.library.path), the way
 * DiSNI's own benchmarks use it: a passive (polling) endpoint group, one stateful verb call per
 * operation, serialized once and executed again each iteration, and a busy-polled completion queue.
 *
 * It measures what `jrdma perf` measures, so the two are compared like for like: one clock read per
 * iteration, an iteration's time from the previous one's end; read_lat reports the read's round trip,
 * send_lat half the ping-pong's; t_typical is the median, as perftest's. Run as a single source file:
 *
 *   java -Djava.library.path=LIBDISNI_DIR -cp disni-2.1.jar:slf4j-api.jar DisniLatency.java \
 *        server|client read_lat|send_lat ADDRESS PORT SIZE ITERATIONS WARMUP [event]
 *
 * event (perftest's -e, scripts/bench-vs-disni --icount): when a poll finds nothing, arm the CQ, poll
 * once more, then sleep on its completion channel (DiSNI's getCqEvent: poll(2) on the channel, then
 * ibv_get_cq_event) and acknowledge the event, on the same thread; without it the CQ is busy-polled.
 *
 * The client prints one line: "disni TEST SIZE t_typical_us T t_avg_us A t_min_us M t_max_us X
 * warmup_s W iterations N". Not part of jrdma's build: DiSNI is not one of its dependencies.
 */
import com.ibm.disni.RdmaEndpoint;
import com.ibm.disni.RdmaEndpointGroup;
import com.ibm.disni.RdmaPassiveEndpointGroup;
import com.ibm.disni.RdmaServerEndpoint;
import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.IbvSge;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.SVCPollCq;
import com.ibm.disni.verbs.SVCPostRecv;
import com.ibm.disni.verbs.SVCPostSend;
import com.ibm.disni.verbs.SVCReqNotify;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

public final class DisniLatency {
    /** Receives kept posted on each side (send_lat needs one; a few keep an early send from an RNR wait). */
    static final int RECEIVES = 4;
    static final int CQ_SIZE = 64;

    public static void main(String[] args) throws Exception {
        if (args.length != 7 && !(args.length == 8 && args[7].equals("event"))) {
            System.err.println("usage: DisniLatency server|client read_lat|send_lat ADDRESS PORT SIZE ITERATIONS WARMUP [event]");
            System.exit(2);
        }
        boolean server = args[0].equals("server");
        String test = args[1];
        if (!test.equals("read_lat") && !test.equals("send_lat")) {
            throw new IllegalArgumentException("unknown test " + test);
        }
        InetSocketAddress address = new InetSocketAddress(args[2], Integer.parseInt(args[3]));
        int size = Integer.parseInt(args[4]), n = Integer.parseInt(args[5]), warmup = Integer.parseInt(args[6]);
        RdmaPassiveEndpointGroup<Endpoint> group = new RdmaPassiveEndpointGroup<>(1000, CQ_SIZE, 1, CQ_SIZE);
        // DiSNI's defaults are 0: a single retransmission or RNR wait would fail the run. perftest's 7.
        group.getConnParam().setRetry_count((byte) 7);
        group.getConnParam().setRnr_retry_count((byte) 7);
        boolean sendTest = test.equals("send_lat"), events = args.length == 8;
        group.init((id, serverSide) -> new Endpoint(group, id, serverSide, size, sendTest, events));
        try {
            if (server) {
                RdmaServerEndpoint<Endpoint> listener = group.createServerEndpoint();
                listener.bind(address, 10);
                System.out.println("DisniLatency server listening on " + address);
                System.out.flush();
                Endpoint e = listener.accept();
                if (test.equals("read_lat")) {
                    e.sendDescriptor();
                    e.awaitReceive();   // the client's "done"
                } else {
                    e.pong(warmup + n);
                }
                e.close();
                listener.close();
            } else {
                Endpoint e = group.createEndpoint();
                // DiSNI's connect waits without a bound when the server rejects it: give up after a minute.
                Thread watchdog = new Thread(() -> {
                    try {
                        Thread.sleep(60_000);
                        System.out.println("DisniLatency: connecting to " + address + " timed out");
                        System.out.flush();
                        Runtime.getRuntime().halt(3);
                    } catch (InterruptedException done) {
                        // connected
                    }
                });
                watchdog.setDaemon(true);
                watchdog.start();
                e.connect(address, 2000);
                watchdog.interrupt();
                long started = System.nanoTime();
                long[] ns;
                if (test.equals("read_lat")) {
                    e.awaitReceive();   // the server's region: address, length, rkey
                    e.readRun(warmup);
                    started = System.nanoTime() - started;
                    ns = e.readRun(n);
                    e.sendDone();
                } else {
                    e.pingRun(warmup);
                    started = System.nanoTime() - started;
                    ns = e.pingRun(n);
                    for (int i = 0; i < ns.length; i++) {
                        ns[i] /= 2;   // half the round trip, as perftest's send_lat
                    }
                }
                report(test, size, ns, started);
                e.close();
            }
        } finally {
            group.close();
        }
    }

    static void report(String test, int size, long[] ns, long warmupNanos) {
        long[] s = ns.clone();
        Arrays.sort(s);
        double avg = Arrays.stream(s).average().orElse(0);
        System.out.printf("disni %s %d t_typical_us %.2f t_avg_us %.2f t_min_us %.2f t_max_us %.2f warmup_s %.1f iterations %d%n",
                test, size, s[s.length / 2] / 1e3, avg / 1e3, s[0] / 1e3, s[s.length - 1] / 1e3,
                warmupNanos / 1e9, s.length);
    }

    static final class Endpoint extends RdmaEndpoint {
        private final int size;
        private final boolean sendTest, events;
        private ByteBuffer data, control;
        private IbvMr dataMr, controlMr;
        private IbvWC[] wcs;
        private SVCPollCq poll;
        private SVCReqNotify arm;
        private IbvCQ cq;
        private SVCPostRecv[] receives;
        private SVCPostSend send, read, control_;
        private long peerAddress;
        private int peerRkey;
        private int receivesDone;

        Endpoint(RdmaEndpointGroup<? extends RdmaEndpoint> group, RdmaCmId id, boolean serverSide, int size, boolean sendTest,
                 boolean events) throws IOException {
            super(group, id, serverSide);
            this.size = size;
            this.sendTest = sendTest;
            this.events = events;
        }

        @Override
        public void init() throws IOException {
            super.init();
            data = ByteBuffer.allocateDirect(Math.max(size, 16)).order(ByteOrder.nativeOrder());
            control = ByteBuffer.allocateDirect(64 * (RECEIVES + 1)).order(ByteOrder.nativeOrder());
            dataMr = registerMemory(data).execute().free().getMr();
            controlMr = registerMemory(control).execute().free().getMr();
            wcs = new IbvWC[CQ_SIZE];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new IbvWC();
            }
            cq = getCqProvider().getCQ();
            poll = cq.poll(wcs, wcs.length);
            arm = cq.reqNotification(false);   // stateful, executed again at each arming (as DiSNI's RdmaCqProcessor)
            // read_lat's receives (the descriptor, "done") land in control's slots 1..RECEIVES,
            // send_lat's payloads all in data (its contents are not looked at).
            receives = new SVCPostRecv[RECEIVES];
            for (int i = 0; i < RECEIVES; i++) {
                IbvSge sge = new IbvSge();
                sge.setAddr(controlMr.getAddr() + 64L * (i + 1));
                sge.setLength(64);
                sge.setLkey(controlMr.getLkey());
                if (sendTest) {
                    sge.setAddr(dataMr.getAddr());
                    sge.setLength(Math.max(size, 16));
                    sge.setLkey(dataMr.getLkey());
                }
                IbvRecvWR wr = new IbvRecvWR();
                wr.setWr_id(100 + i);
                wr.setSg_list(new java.util.LinkedList<>(List.of(sge)));
                receives[i] = postRecv(new java.util.LinkedList<>(List.of(wr)));
                receives[i].execute();
            }
            send = postSend(request(IbvSendWR.IBV_WR_SEND, dataMr.getAddr(), size, dataMr.getLkey(), 1));
            control_ = postSend(request(IbvSendWR.IBV_WR_SEND, controlMr.getAddr(), 16, controlMr.getLkey(), 2));
        }

        private java.util.LinkedList<IbvSendWR> request(int opcode, long addr, int length, int lkey, long id) {
            IbvSge sge = new IbvSge();
            sge.setAddr(addr);
            sge.setLength(length);
            sge.setLkey(lkey);
            IbvSendWR wr = new IbvSendWR();
            wr.setWr_id(id);
            wr.setOpcode(opcode);
            wr.setSend_flags(IbvSendWR.IBV_SEND_SIGNALED);
            wr.setSg_list(new java.util.LinkedList<>(List.of(sge)));
            return new java.util.LinkedList<>(List.of(wr));
        }

        /** read_lat's server: tells the client where its region is. */
        void sendDescriptor() throws IOException {
            control.putLong(0, dataMr.getAddr());
            control.putInt(8, dataMr.getRkey());
            control_.execute();
            awaitSend();
        }

        void sendDone() throws IOException {
            control_.execute();
            awaitSend();
        }

        long[] readRun(int n) throws IOException {
            if (read == null) {
                java.util.LinkedList<IbvSendWR> wr = request(IbvSendWR.IBV_WR_RDMA_READ, dataMr.getAddr(), size, dataMr.getLkey(), 3);
                wr.get(0).getRdma().setRemote_addr(peerAddress);
                wr.get(0).getRdma().setRkey(peerRkey);
                read = postSend(wr);
            }
            long[] ns = new long[n];
            long[] postNs = Boolean.getBoolean("disni.postTimes") ? new long[n] : null;
            long t = System.nanoTime();
            for (int i = 0; i < n; i++) {
                read.execute();
                if (postNs != null) {
                    postNs[i] = System.nanoTime() - t;
                }
                awaitSend();
                long now = System.nanoTime();
                ns[i] = now - t;
                t = now;
            }
            if (postNs != null) {
                Arrays.sort(postNs);
                System.out.printf("disni read_lat posts: median %.2f us of the iteration%n", postNs[n / 2] / 1e3);
            }
            return ns;
        }

        /** send_lat's client: send, then wait for the reply (and the send's own completion). */
        long[] pingRun(int n) throws IOException {
            long[] ns = new long[n];
            long t = System.nanoTime();
            for (int i = 0; i < n; i++) {
                int before = receivesDone;
                send.execute();
                awaitSend();
                while (receivesDone == before) {
                    pollOnce();
                }
                long now = System.nanoTime();
                ns[i] = now - t;
                t = now;
            }
            return ns;
        }

        /** send_lat's server: answer each send with one. */
        void pong(int n) throws IOException {
            for (int i = 0; i < n; i++) {
                awaitReceive();
                send.execute();
                awaitSend();
            }
        }

        private int sendsDone, sendsWaited;

        private void awaitSend() throws IOException {
            sendsWaited++;
            while (sendsDone < sendsWaited) {
                pollOnce();
            }
        }

        private int receivesWaited;

        void awaitReceive() throws IOException {
            receivesWaited++;
            while (receivesDone < receivesWaited) {
                pollOnce();
            }
        }

        private void pollOnce() throws IOException {
            int got = poll.execute().getPolls();
            if (got == 0 && events) {
                arm.execute();
                got = poll.execute().getPolls();   // what came before the arming raises no event
                if (got == 0) {
                    if (cq.getChannel().getCqEvent(cq, 50)) {   // at most 50 ms, then look again
                        cq.ackEvents(1);
                    }
                    got = poll.execute().getPolls();
                }
            }
            for (int i = 0; i < got; i++) {
                IbvWC wc = wcs[i];
                if (wc.getStatus() != IbvWC.IbvWcStatus.IBV_WC_SUCCESS.ordinal()) {   // getStatus() is the ibv_wc_status
                    throw new IOException("work completion failed: status " + wc.getStatus() + ", wr_id " + wc.getWr_id());
                }
                if (wc.getOpcode() == IbvWC.IbvWcOpcode.IBV_WC_RECV.getOpcode()) {
                    int slot = (int) wc.getWr_id() - 100;
                    if (!sendTest && peerRkey == 0) {   // the first message a read_lat client gets: the descriptor
                        peerAddress = control.getLong(64 * (slot + 1));
                        peerRkey = control.getInt(64 * (slot + 1) + 8);
                    }
                    receivesDone++;
                    receives[slot].execute();
                } else {
                    sendsDone++;
                }
            }
        }
    }
}
