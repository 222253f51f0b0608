package dev.hurray.cli;

import dev.hurray.formats.Format;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** picocli converter for {@code --from}/{@code --to}. */
final class FormatConverter implements ITypeConverter<Format> {
    @Override
    public Format convert(String value) {
        try {
            return Format.parse(value);
        } catch (IllegalArgumentException e) {
            throw new TypeConversionException(e.getMessage());
        }
    }
}
