package dev.hurray.cli;

import picocli.CommandLine.IVersionProvider;

/** {@code hurray --version}: the jar's implementation version, or {@code dev} from a build tree. */
final class VersionProvider implements IVersionProvider {
    @Override
    public String[] getVersion() {
        String v = HurrayCommand.class.getPackage().getImplementationVersion();
        return new String[] {"hurray " + (v == null ? "dev" : v) + " (Java " + Runtime.version() + ")"};
    }
}
