class FilesController < ApplicationController
  def show
    send_file "/srv/files/#{File.basename(params[:name])}"
  end

  def readme
    render plain: File.read(Rails.root.join("README.md"))
  end
end
