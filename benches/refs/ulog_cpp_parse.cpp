// Our driver for PX4's C++ ULog reader (ulog_cpp), for the side-by-side ULog table of
// benches/compare_refs.sh (issue 44). It only parses: the whole file is read into memory first
// (untimed), then fed to ulog_cpp's Reader with a DataContainer that keeps the full log (every
// subscription's samples), the like of pyulog's ULog(FILE) and of our ingest. Prints the parse
// time in seconds and a count that proves the data was kept.
//
//   ulog_cpp_parse FILE.ulg
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include <ulog_cpp/data_container.hpp>
#include <ulog_cpp/reader.hpp>

int main(int argc, char** argv)
{
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE.ulg\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", argv[1]);
    return 1;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  const auto started = std::chrono::steady_clock::now();
  auto container =
      std::make_shared<ulog_cpp::DataContainer>(ulog_cpp::DataContainer::StorageConfig::FullLog);
  ulog_cpp::Reader reader{container};
  reader.readChunk(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (container->hadFatalError()) {
    std::fprintf(stderr, "%s: fatal parsing error\n", argv[1]);
    return 1;
  }
  size_t samples = 0;
  for (const auto& [name, sub] : container->subscriptionsByNameAndMultiId()) {
    samples += sub->size();
  }
  std::printf("seconds=%.6f samples=%zu subscriptions=%zu bytes=%zu\n", seconds, samples,
              container->subscriptionsByNameAndMultiId().size(), bytes.size());
  return 0;
}
