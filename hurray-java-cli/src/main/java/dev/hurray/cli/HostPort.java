package dev.hurray.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * A {@code HOST:PORT} argument; IPv6 hosts in brackets ({@code [::1]:9000}).
 *
 * @param host host name or address, without brackets
 * @param port 1–65535
 */
record HostPort(String host, int port) {
    static HostPort parse(String s) {
        int colon = s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new IllegalArgumentException("expected HOST:PORT, got '" + s + "'");
        }
        String host = s.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new IllegalArgumentException("put an IPv6 address in brackets: [" + host + "]:PORT");
        }
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("port '" + s.substring(colon + 1) + "' is not a number");
        }
        if (port < 1 || port > 65535 || host.isEmpty()) {
            throw new IllegalArgumentException("expected HOST:PORT with a port in 1-65535, got '" + s + "'");
        }
        return new HostPort(host, port);
    }

    @Override
    public String toString() {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    static final class Converter implements ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            try {
                return parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
