# manpage.cmake: writes OUT, the man page trainbench(1), from the command's own help: BIN's
# `--help` and `CMD --help` of every command in COMMANDS (a comma-separated list), so the page
# says what the binary says.
execute_process(COMMAND ${BIN} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${BIN} --help failed (${rc})")
endif()
string(TIMESTAMP today "%Y-%m-%d" UTC)
set(page ".TH TRAINBENCH 1 \"${today}\" \"trainbench ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\ntrainbench \\- benchmark neural-network training algorithms\n")
string(APPEND page ".SH SYNOPSIS\n.B trainbench\n\\fIcommand\\fR [\\fIoptions\\fR]\n")
# a function, not a macro: a macro would expand ${...} in the help text
function(section title text)
    string(REPLACE "\\" "\\e" body "${text}")
    string(REGEX REPLACE "\n\\." "\n\\\\&." body "${body}")
    set(page "${page}.SH ${title}\n.nf\n${body}.fi\n" PARENT_SCOPE)
endfunction()
section("DESCRIPTION" "${top}")
string(REPLACE "," ";" commands "${COMMANDS}")
foreach(cmd ${commands})
    execute_process(COMMAND ${BIN} ${cmd} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${BIN} ${cmd} --help failed (${rc})")
    endif()
    string(TOUPPER "${cmd}" title)
    section("COMMAND ${title}" "${help}")
endforeach()
string(APPEND page ".SH FILES\n.nf\n<prefix>/share/trainbench    search spaces, studies, the hardware reference\n"
       "                             (\\fBtrainbench version\\fR names the one in use;\n"
       "                             \\fBTRAINBENCH_DATA_DIR\\fR overrides it)\n.fi\n")
file(WRITE ${OUT}.new "${page}")
file(COPY_FILE ${OUT}.new ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.new)
