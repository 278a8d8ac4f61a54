# fuzz_tcp_receive_smoke, fuzz_churn_smoke: copies the seed corpus to WORK/corpus (libFuzzer adds new inputs to
# its first corpus directory; the repository's seeds stay untouched) and fuzzes for SECONDS.
# A crash, leak, sanitizer report or timeout makes the fuzzer exit non-zero and fails the test;
# the reproducer is then in WORK/artifacts/.
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... -DSECONDS=60 -P run_smoke.cmake
foreach(v FUZZER CORPUS WORK SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_smoke.cmake: -D${v}= is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK}/corpus)
file(MAKE_DIRECTORY ${WORK}/artifacts)
file(COPY ${CORPUS}/ DESTINATION ${WORK}/corpus)

execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -print_final_stats=1 -timeout=25
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} exited with ${rc}; reproducer(s) in ${WORK}/artifacts/")
endif()
