# embed.cmake: writes OUT, a C header defining the array NAME as the bytes of the file IN and a
# closing NUL (the report's page script and style: src/report/page.js, page.css).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT}.new "/* generated from ${IN} by cmake/embed.cmake */\nstatic const char ${NAME}[] = {${bytes}0};\n")
file(COPY_FILE ${OUT}.new ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.new)
