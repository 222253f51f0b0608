package dev.hurray.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * One loopback TCP connection with a sender thread that sends messages of one size as fast as
 * the receiver takes them; the measuring thread calls {@link #receiveOne()}. Every transport
 * (Hurray, a raw channel, Arrow IPC) uses the same connection setup and default socket options,
 * so only the transport differs.
 *
 * <p>The sender runs until {@link #close()}, which closes the receiving end so that the sender's
 * next write fails, then joins it. A sender failure before {@code close()} is rethrown by the
 * next {@code receiveOne()}.
 */
public abstract class Loopback implements AutoCloseable {
    /** The transports this harness knows, as named in benchmark parameters. */
    public static final String HURRAY = "hurray", HURRAY_NOPOOL = "hurray-nopool", RAW = "raw", ARROW = "arrow";

    /**
     * The transports {@link #open} accepts, baseline first; {@link #HURRAY_NOPOOL} reads with the
     * reader's buffer pool turned off.
     */
    public static java.util.List<String> transports() {
        return java.util.List.of(RAW, HURRAY, HURRAY_NOPOOL, ARROW);
    }

    protected final int size;
    protected final SocketChannel senderChannel;
    protected final SocketChannel receiverChannel;
    private final ServerSocketChannel server;
    private final Thread sender;
    private volatile boolean stopping;
    private volatile Throwable senderFailure;

    /**
     * Makes a transport by name: {@link #RAW}, {@link #HURRAY} (default reader options),
     * {@link #HURRAY_NOPOOL} (the reader's buffer pool off) or {@link #ARROW}.
     */
    public static Loopback open(String transport, int size) throws IOException {
        return switch (transport) {
            case HURRAY -> new HurrayLoopback(size, false);
            case HURRAY_NOPOOL -> new HurrayLoopback(size, true);
            case RAW -> new RawLoopback(size);
            case ARROW -> new ArrowLoopback(size);
            default -> throw new IllegalArgumentException("unknown transport " + transport);
        };
    }

    protected Loopback(int size) throws IOException {
        this.size = size;
        server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        senderChannel = SocketChannel.open(server.getLocalAddress());
        receiverChannel = server.accept();
        sender = Thread.ofPlatform().daemon().name("loopback-sender").unstarted(() -> {
            try {
                send();
            } catch (Throwable t) {
                if (!stopping) {
                    senderFailure = t;
                    // the receiver must not wait forever for bytes that will never come
                    try {
                        senderChannel.close();
                    } catch (IOException ignored) {
                        // the failure is already recorded
                    }
                }
            }
        });
    }

    /** Starts the sender; called by subclasses once their receiver is ready. */
    protected final void start() {
        sender.start();
    }

    /** Whether {@link #close()} has begun: the sender's loop condition. */
    protected final boolean stopping() {
        return stopping;
    }

    /** The sender thread's body: send messages of {@link #size} payload bytes until {@link #stopping()}. */
    protected abstract void send() throws Exception;

    /**
     * Receives one message and releases it (a tensor is closed before returning).
     *
     * @return the payload bytes received
     */
    public final long receiveOne() throws IOException {
        try {
            return receive(false);
        } catch (IOException | RuntimeException e) {
            addSenderFailure(e);
            throw e;
        }
    }

    /**
     * As {@link #receiveOne()}, and checks every byte against {@link Payloads}.
     *
     * @throws IllegalStateException if a byte differs
     */
    public final long receiveAndCheck() throws IOException {
        try {
            return receive(true);
        } catch (IOException | RuntimeException e) {
            addSenderFailure(e);
            throw e;
        }
    }

    private void addSenderFailure(Exception e) {
        Throwable t = senderFailure;
        if (t != null && t != e) {
            e.addSuppressed(t);
        }
    }

    protected abstract long receive(boolean check) throws IOException;

    /** Releases the receiver's resources (called by {@link #close()} before the sockets close). */
    protected abstract void closeReceiver() throws IOException;

    @Override
    public final void close() throws IOException {
        stopping = true;
        try {
            closeReceiver();
        } finally {
            receiverChannel.close();
            try {
                sender.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            senderChannel.close();
            server.close();
        }
        if (sender.isAlive()) {
            throw new IOException("the sender thread did not stop within 10 s");
        }
    }

    static void check(java.lang.foreign.MemorySegment received) {
        long at = Payloads.mismatch(received);
        if (at >= 0) {
            throw new IllegalStateException("received byte " + at + " differs from what was sent");
        }
    }
}
